// Telemetry first: it can only instrument express, pg and ioredis if it loads before them.
import { telemetry } from './instrument';
import { loadConfig } from './config';
import { runGateway } from './run-gateway';

/**
 * The gateway as `pnpm start` and compose run it: main.ts, except that without
 * RECEIPT_SIGNING_KEY it makes a development key for this process, and says so in a warning.
 * Deployments set the key (the chart requires it) and run main.js.
 */
runGateway(telemetry, () => loadConfig(process.env, { developmentReceiptKey: true }));
