import { join } from 'node:path';
import { startTelemetry } from '../index';

/** Imported first by trace-probe.ts, as every service imports its instrument.ts first. */
export const telemetry = startTelemetry('trace-probe', process.env, {
  packageJsonPath: join(__dirname, '..', '..', 'package.json'),
});
