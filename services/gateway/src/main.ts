// Telemetry first: it can only instrument express, pg and ioredis if it loads before them.
import { telemetry } from './instrument';
import { runService, startHttpService } from '@linkservice/lifecycle';
import { createApp } from './app';
import { loadConfig } from './config';
import { buildDeps } from './deps';
import { GracefulShutdown } from './http/graceful-shutdown';

runService({
  name: 'gateway',
  telemetry,
  loadConfig,
  buildDeps,
  start: ({ deps }, { config, logger }) => {
    const shutdown = new GracefulShutdown();
    return startHttpService(createApp(deps, { shutdown }), {
      name: 'gateway',
      port: config.GATEWAY_PORT,
      logger,
      // /readyz fails and responses not yet started say Connection: close.
      onStop: () => {
        shutdown.begin();
      },
    });
  },
});
