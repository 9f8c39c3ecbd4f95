import type { BaseConfig } from '@linkservice/config';
import { baseEnvSchema, parseEnv } from '@linkservice/config';

/**
 * linkctl's truth is Postgres; LINK_DOMAIN forms the linkHost it prints. REDIS_URL (or
 * REDIS_CLUSTER_NODES) and REDIS_PREFIX reach the link host's cache, which `app set-ios` / `unset-ios` clear after their
 * change (the only commands that open Redis).
 */
export const linkctlEnvSchema = baseEnvSchema.pick({
  DATABASE_URL: true,
  LINK_DOMAIN: true,
  REDIS_URL: true,
  REDIS_CLUSTER_NODES: true,
  REDIS_PREFIX: true,
});

export type LinkctlConfig = Pick<
  BaseConfig,
  'DATABASE_URL' | 'LINK_DOMAIN' | 'REDIS_URL' | 'REDIS_CLUSTER_NODES' | 'REDIS_PREFIX'
>;

/** Throws ConfigError listing every bad variable; main.ts turns it into one line on stderr. */
export function loadConfig(env: Record<string, string | undefined> = process.env): LinkctlConfig {
  return parseEnv(linkctlEnvSchema, env);
}
