import { join } from 'node:path';
import { startTelemetry } from '@linkservice/telemetry';

/**
 * Imported first by main.ts: OpenTelemetry patches pg, ioredis and bullmq only when it starts
 * before they are loaded. Reads the OTEL_* variables and DEPLOYMENT_ENVIRONMENT itself; nothing else here touches the env.
 */
export const telemetry = startTelemetry('linkservice-worker', process.env, {
  packageJsonPath: join(__dirname, '..', 'package.json'),
});
