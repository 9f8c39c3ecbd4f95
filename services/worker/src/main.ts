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
  // The metrics port first: failing to bind it must stop a worker before it takes any job.
  start: async ({ deps }, context) => {
    const metrics = await startWorkerMetrics(deps);
    return alongsideMetrics(await startWorker(deps, context), metrics);
  },
});
