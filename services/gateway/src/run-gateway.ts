import type { Telemetry } from '@linkservice/telemetry';
import { runService, startHttpService } from '@linkservice/lifecycle';
import { alongsideMetrics, startMetricsServer } from '@linkservice/metrics';
import { createApp } from './app';
import type { GatewayConfig } from './config';
import { buildDeps } from './deps';

/**
 * Runs the gateway process: main.ts as deployed, dev.main.ts for `pnpm start`. Each imports its
 * instrument.ts first (telemetry must load before express, pg and ioredis) and passes it here.
 */
export function runGateway(telemetry: Telemetry, loadConfig: () => GatewayConfig): void {
  runService({
    name: 'gateway',
    telemetry,
    loadConfig,
    buildDeps,
    start: async ({ deps }, { config, logger, shutdown }) => {
      if (config.receiptSigningKeyGenerated) {
        logger.warn(
          'RECEIPT_SIGNING_KEY is unset: erasure receipts are signed with a development key made ' +
            'for this process, and stop verifying when it exits. Set RECEIPT_SIGNING_KEY (an ' +
            'Ed25519 private key, PKCS#8 PEM: openssl genpkey -algorithm ed25519) to keep one.',
        );
      }
      const metrics = await startMetricsServer(deps.metrics.registry, {
        port: config.METRICS_PORT,
        logger,
      });
      const started = await startHttpService(
        createApp(deps, { isShuttingDown: () => shutdown.inProgress }),
        { name: 'gateway', port: config.GATEWAY_PORT, logger },
      );
      return alongsideMetrics(started, metrics);
    },
  });
}
