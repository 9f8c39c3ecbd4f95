// Telemetry first: it can only instrument pg, ioredis and bullmq if it loads before them.
import { telemetry } from './instrument';
import { runService } from '@linkservice/lifecycle';
import { loadConfig } from './config';
import { buildDeps } from './deps';
import { startWorker } from './worker';

runService({
  name: 'worker',
  telemetry,
  loadConfig,
  buildDeps,
  start: ({ deps }, context) => startWorker(deps, context),
});
