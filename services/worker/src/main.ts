// Telemetry first: it can only instrument pg, ioredis and bullmq if it loads before them.
import { telemetry } from './instrument';
import { runService } from '@linkservice/lifecycle';
import { alongsideMetrics } from '@linkservice/metrics';
import { loadConfig } from './config';
import { buildDeps } from './deps';
import { startWorkerMetrics } from './metrics';
import { startWorker } from './worker';

runService({
  name: 'worker',
  telemetry,
  loadConfig,
  buildDeps,
  start: async ({ deps }, context) => {
    const started = await startWorker(deps, context);
    return alongsideMetrics(started, await startWorkerMetrics(deps));
  },
});
