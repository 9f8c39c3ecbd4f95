import { join } from 'node:path';
import { startTelemetry } from '@linkservice/telemetry';

/**
 * Imported first by main.ts: OpenTelemetry patches express, pg and ioredis only when it starts
 * before they are loaded. Reads the OTEL_* variables and DEPLOYMENT_ENVIRONMENT itself; nothing else here touches the env.
 */
export const telemetry = startTelemetry('linkservice-gateway', process.env, {
  packageJsonPath: join(__dirname, '..', 'package.json'),
});
