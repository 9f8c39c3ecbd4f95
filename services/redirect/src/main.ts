// Telemetry first: it can only instrument node:http, pg and ioredis if it loads before them.
import { telemetry } from './instrument';
import { runService, settlesWithin, startHttpService } from '@linkservice/lifecycle';
import { startMetricsServer } from '@linkservice/metrics';
import { createApp } from './app';
import { loadConfig } from './config';
import { buildDeps } from './deps';

/** The final click flush's own bound when the drain used up the grace period. */
const FINAL_FLUSH_MIN_MS = 500;

runService({
  name: 'redirect',
  telemetry,
  loadConfig,
  buildDeps,
  start: async (resources, { config, logger, shutdown }) => {
    const metrics = await startMetricsServer(resources.deps.metrics.registry, {
      port: config.METRICS_PORT,
      logger,
    });
    const started = await startHttpService(
      createApp(resources.deps, { isShuttingDown: () => shutdown.inProgress }),
      {
        name: 'redirect',
        port: config.REDIRECT_PORT,
        logger,
        // Behind a load balancer keep-alive sockets outlive its idle timeout, not the reverse.
        keepAliveTimeoutMs: 65_000,
      },
    );
    resources.startFlushing();
    return {
      intake: started.intake,
      ports: { ...started.ports, metrics: metrics.port },
      // In-flight redirects finish first (each has counted its click in Redis before answering),
      // then the clicks are flushed a last time, within what is left of the grace period (at
      // least FINAL_FLUSH_MIN_MS): a clean stop loses none. A flush cut short leaves its batch in
      // Redis, which another replica or the next start applies; only clicks Redis never took
      // (held in memory during an outage) would be lost, and that is logged, and clicks whose
      // Redis call may or may not have run and that Redis has not answered for are dropped into
      // clicks_dropped (the flusher's stop). With Redis frozen the stop takes a few command
      // timeouts (REDIS_COMMAND_TIMEOUT_MS each).
      stop: async (graceMs) => {
        const graceEnds = Date.now() + graceMs;
        const drained = await started.stop(graceMs);
        const flushMs = Math.max(graceEnds - Date.now(), FINAL_FLUSH_MIN_MS);
        if (!(await settlesWithin(resources.flusher.stop(), flushMs))) {
          logger.error(
            { timeoutMs: flushMs },
            'final click flush did not finish in time; its batch stays in Redis for another replica or the next start',
          );
        }
        metrics.close();
        return drained;
      },
    };
  },
});
