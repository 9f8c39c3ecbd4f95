// Telemetry first: it can only instrument express, pg and ioredis if it loads before them.
import { telemetry } from './instrument';
import { loadConfig } from './config';
import { runGateway } from './run-gateway';

// As deployed: RECEIPT_SIGNING_KEY is required.
runGateway(telemetry, () => loadConfig());
