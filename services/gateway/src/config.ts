import { z } from 'zod';
import { baseEnvSchema, parseEnv, port, positiveInt } from '@linkservice/config';

/**
 * Express's `trust proxy`: `false` (default, the peer address is the client), `true`, a hop
 * count, or a comma-separated list of addresses/subnets. Only affects what request logs call the
 * client address: nothing in the API depends on it.
 */
const trustProxy = z
  .string()
  .default('false')
  .transform((value): boolean | number | string => {
    if (value === 'true') return true;
    if (value === 'false') return false;
    return /^\d+$/.test(value) ? Number(value) : value;
  });

export const gatewayEnvSchema = baseEnvSchema.extend({
  GATEWAY_PORT: port(8080),
  /** Link creations per app per hour, live and test together. */
  CREATION_LIMIT_PER_HOUR: positiveInt(300),
  /** How long POST /links (and /links/batch) waits for the worker before answering 503. */
  CREATION_TIMEOUT_MS: positiveInt(10_000),
  /** After SIGTERM: how long in-flight requests may take before connections are cut. */
  SHUTDOWN_GRACE_MS: positiveInt(10_000),
  TRUST_PROXY: trustProxy,
});

export type GatewayConfig = z.infer<typeof gatewayEnvSchema>;

export function loadConfig(env: Record<string, string | undefined> = process.env): GatewayConfig {
  return parseEnv(gatewayEnvSchema, env);
}
