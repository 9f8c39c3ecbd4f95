// Telemetry first: it can only instrument node:http, pg and ioredis if it loads before them.
import { telemetry } from './instrument';
import { runService, startHttpService } from '@linkservice/lifecycle';
import { createApp } from './app';
import { loadConfig } from './config';
import { buildDeps } from './deps';

runService({
  name: 'redirect',
  telemetry,
  loadConfig,
  buildDeps,
  // Stopping lets in-flight redirects finish (each has counted its click in Redis before
  // answering); closing the deps then flushes the clicks a last time: a clean stop loses none.
  start: async (resources, { config, logger, shutdown }) => {
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
    return started;
  },
});
