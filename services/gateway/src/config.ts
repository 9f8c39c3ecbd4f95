import { webhookSharedEnv } from '@linkservice/webhooks';
import { DEFAULT_GROUP_WAIT_MS, DEFAULT_GROUPS_IN_FLIGHT } from '@linkservice/creation';
import { z } from 'zod';
import {
  baseEnvSchema,
  ownMetricsPort,
  parseEnv,
  port,
  positiveInt,
  withOwnMetricsPort,
} from '@linkservice/config';
import {
  generateReceiptSigningKey,
  readReceiptSigningKey,
  readReceiptVerificationKeys,
} from '@linkservice/keys';

/**
 * Express's `trust proxy`: `false` (default, the peer address is the client), `true`, a hop
 * count, or a comma-separated list of addresses/subnets. Decides the client address (`req.ip`):
 * what request logs show, and whose budget the SDK abuse limit charges. Behind a proxy, set it
 * or every app user shares the proxy's budget; without one, leave it off, or any caller can name
 * its own address in X-Forwarded-For.
 */
const trustProxy = z
  .string()
  .default('false')
  .transform((value): boolean | number | string => {
    if (value === 'true') return true;
    if (value === 'false') return false;
    return /^\d+$/.test(value) ? Number(value) : value;
  });

/** A zod transform by a reader that throws an Error saying what is wrong (never the value). */
function readWith<T>(read: (text: string) => T) {
  return (text: string, ctx: z.RefinementCtx): T => {
    try {
      return read(text);
    } catch (error) {
      ctx.addIssue({ code: 'custom', message: (error as Error).message });
      return z.NEVER;
    }
  };
}

/**
 * RECEIPT_SIGNING_KEY: the Ed25519 private key (PKCS#8 PEM) that signs erasure receipts; its
 * public half is served at /.well-known/jwks.json. Required: `pnpm start` makes a development
 * key when it is unset (loadConfig's `developmentReceiptKey`), the chart takes it from a Secret.
 * Never echoed in an error.
 */
const receiptSigningKey = z
  .string({
    error: (issue) =>
      issue.input === undefined
        ? 'is required: an Ed25519 private key, PKCS#8 PEM (openssl genpkey -algorithm ed25519)'
        : 'must be a PKCS#8 PEM private key',
  })
  .transform(readWith(readReceiptSigningKey));

/**
 * RECEIPT_PREVIOUS_PUBLIC_KEYS: the public halves of signing keys rotated out, served in the
 * JWKS beside the current one so the receipts they signed keep verifying. Public, not secret.
 */
const receiptVerificationKeys = z
  .string()
  .default('')
  .transform(readWith(readReceiptVerificationKeys));

export const gatewayEnvSchema = baseEnvSchema.extend({
  GATEWAY_PORT: port(8080),
  /** Prometheus' scrape target: `GET /metrics` on this port of its own (0: any free port). */
  METRICS_PORT: port(9464),
  /** Wins over METRICS_PORT (withOwnMetricsPort): one port each for the services of `pnpm start`. */
  GATEWAY_METRICS_PORT: ownMetricsPort,
  /** Link creations per app per hour, live and test together. */
  CREATION_LIMIT_PER_HOUR: positiveInt(300),
  /**
   * How long POST /links (and /links/batch) waits for the worker before answering 503, counted
   * from the limiter's reservation on (so a slow Redis spends this budget, not more).
   */
  CREATION_TIMEOUT_MS: positiveInt(10_000),
  /**
   * Group commit (libs/creation README): creation jobs of this gateway that may await the worker
   * at once; requests arriving while that many are on their way gather into the next group.
   */
  CREATION_GROUPS_IN_FLIGHT: positiveInt(DEFAULT_GROUPS_IN_FLIGHT),
  /**
   * The longest a creation gathers with others before its group is sent anyway (ms). A creation
   * that finds fewer than CREATION_GROUPS_IN_FLIGHT groups on their way does not wait.
   */
  CREATION_GROUP_WAIT_MS: positiveInt(DEFAULT_GROUP_WAIT_MS),
  /**
   * Per-request Postgres budget: every query a request runs (getting a connection included)
   * ends by this long after the request arrived, or the request answers 503 `unavailable`. A
   * creation's settle, after its CREATION_TIMEOUT_MS, has its own bound (SETTLE_DEADLINE_MS).
   */
  API_REQUEST_BUDGET_MS: positiveInt(2_500),
  /**
   * Bound of each command on the gateway's Redis client (creation limiter, SDK limiter, link
   * cache invalidation, click tokens, readiness): past it the command fails ("Command timed
   * out") and the request answers 503. A timed-out command may still have run.
   */
  REDIS_COMMAND_TIMEOUT_MS: positiveInt(500),
  /**
   * Requests to /api/v1/sdk per minute for one publishable key from one client address, all
   * SDK endpoints together (app-interface.md); then 429 until the minute is over.
   */
  SDK_RATE_LIMIT_PER_MINUTE: positiveInt(600),
  /**
   * How long a click token can match an install, counted from its click: the link host's
   * CLICK_TOKEN_TTL_SECONDS, which both services must agree on (the chart sets both from one
   * value). The token's Redis key expires then too; this also refuses one a longer-lived key kept.
   */
  CLICK_TOKEN_TTL_SECONDS: positiveInt(3_600),
  RECEIPT_SIGNING_KEY: receiptSigningKey,
  ...webhookSharedEnv,
  RECEIPT_PREVIOUS_PUBLIC_KEYS: receiptVerificationKeys,
  /** After SIGTERM: how long in-flight requests may take before connections are cut. */
  SHUTDOWN_GRACE_MS: positiveInt(10_000),
  TRUST_PROXY: trustProxy,
});

export type GatewayConfig = z.infer<typeof gatewayEnvSchema> & {
  /** RECEIPT_SIGNING_KEY was unset and a development key was made for this process. */
  receiptSigningKeyGenerated: boolean;
};

export interface LoadOptions {
  /**
   * Without RECEIPT_SIGNING_KEY, make a key for this process instead of refusing to start: for
   * `pnpm start` and compose (dev.main.ts). Its receipts stop verifying when the process ends.
   */
  developmentReceiptKey?: boolean;
}

export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  options: LoadOptions = {},
): GatewayConfig {
  const generate = options.developmentReceiptKey === true && !env.RECEIPT_SIGNING_KEY;
  const config = parseEnv(
    gatewayEnvSchema,
    generate ? { ...env, RECEIPT_SIGNING_KEY: generateReceiptSigningKey() } : env,
  );
  return {
    ...withOwnMetricsPort(config, config.GATEWAY_METRICS_PORT),
    receiptSigningKeyGenerated: generate,
  };
}
