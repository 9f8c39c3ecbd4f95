import { join } from 'node:path';
import { startTelemetry } from '@linkservice/telemetry';

/**
 * Imported first by main.ts: OpenTelemetry patches node:http, pg and ioredis only when it starts
 * before they are loaded. Reads the OTEL_* variables and DEPLOYMENT_ENVIRONMENT itself; nothing else here touches the env.
 */
export const telemetry = startTelemetry('linkservice-redirect', process.env, {
  packageJsonPath: join(__dirname, '..', 'package.json'),
  // People follow links: no query (ls_click tokens), user agent or address in its spans.
  endUserRequests: true,
});
