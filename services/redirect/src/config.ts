import { z } from 'zod';
import {
  baseEnvSchema,
  ownMetricsPort,
  parseEnv,
  port,
  positiveInt,
  withOwnMetricsPort,
} from '@linkservice/config';

export const redirectEnvSchema = baseEnvSchema.extend({
  REDIRECT_PORT: port(8081),
  /** Prometheus' scrape target: `GET /metrics` on this port of its own (0: any free port). */
  METRICS_PORT: port(9466),
  /** Wins over METRICS_PORT (withOwnMetricsPort): one port each for the services of `pnpm start`. */
  REDIRECT_METRICS_PORT: ownMetricsPort,
  /**
   * Take the link host from `X-Forwarded-Host` instead of `Host`. Only for deployments where a
   * proxy in front always sets (or strips) it; otherwise any client could pick the host.
   */
  TRUST_FORWARDED_HOST: z.stringbool({ error: 'must be true or false' }).default(false),
  /**
   * Take the client's address (for its country and unique-visitor count, never stored) from the
   * first `X-Forwarded-For` entry instead of the connection. Only behind a proxy that sets it.
   */
  TRUST_FORWARDED_FOR: z.stringbool({ error: 'must be true or false' }).default(false),
  /** Count clicks' analytics (dimensions and unique visitors) with them. */
  ANALYTICS_ENABLED: z.stringbool({ error: 'must be true or false' }).default(true),
  /**
   * An MMDB file (MaxMind GeoIP2/GeoLite2 Country or compatible) to look clients' countries up
   * in, instead of the bundled DB-IP Lite database.
   */
  GEO_DATABASE_PATH: z.string().min(1).optional(),
  /**
   * A request header an edge in front sets to the client's country (e.g. `cf-ipcountry` behind
   * Cloudflare). Trusted when set: only where every request comes through that edge.
   */
  GEO_COUNTRY_HEADER: z
    .string()
    .regex(/^[A-Za-z0-9-]+$/, 'must be a header name')
    .transform((name) => name.toLowerCase())
    .optional(),
  /** How long a resolved link is served from Redis; writers invalidate it sooner. */
  LINK_CACHE_TTL_SECONDS: positiveInt(300),
  /** How long "no such alias" is remembered, so bursts of unknown aliases spare Postgres. */
  LINK_CACHE_NEGATIVE_TTL_SECONDS: positiveInt(10),
  /** How often counted clicks move from Redis into link_clicks. */
  CLICK_FLUSH_INTERVAL_MS: positiveInt(1_000),
  /** A click batch left unapplied this long is taken over (its replica is presumed dead). */
  CLICK_RECOVERY_AFTER_MS: positiveInt(30_000),
  /**
   * How long a click token (the `ls_click` minted with each counted click) can match an install,
   * counted from its click: its Redis key expires then. The app interface's matching window.
   */
  CLICK_TOKEN_TTL_SECONDS: positiveInt(3_600),
  /**
   * How long a Redis command of the redirect may take before it counts as failed: a redirect
   * then falls back to Postgres, so a frozen Redis costs a redirect about this much (the issue's
   * bound: a fallback within 500 ms). A timed-out lookup may still run later, so its click is
   * reconciled rather than counted again (see ClickCounter).
   */
  REDIS_COMMAND_TIMEOUT_MS: positiveInt(300),
  /** After SIGTERM: how long in-flight requests may take before connections are cut. */
  SHUTDOWN_GRACE_MS: positiveInt(10_000),
});

export type RedirectConfig = z.infer<typeof redirectEnvSchema>;

export function loadConfig(env: Record<string, string | undefined> = process.env): RedirectConfig {
  const config = parseEnv(redirectEnvSchema, env);
  return withOwnMetricsPort(config, config.REDIRECT_METRICS_PORT);
}
