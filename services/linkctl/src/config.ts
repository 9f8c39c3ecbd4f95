import type { BaseConfig } from '@linkservice/config';
import { baseEnvSchema, parseEnv } from '@linkservice/config';

/** linkctl talks to Postgres only; LINK_DOMAIN forms the linkHost it prints. */
const linkctlEnvSchema = baseEnvSchema.pick({ DATABASE_URL: true, LINK_DOMAIN: true });

export type LinkctlConfig = Pick<BaseConfig, 'DATABASE_URL' | 'LINK_DOMAIN'>;

/** Throws ConfigError listing every bad variable; main.ts turns it into one line on stderr. */
export function loadConfig(env: Record<string, string | undefined> = process.env): LinkctlConfig {
  return parseEnv(linkctlEnvSchema, env);
}
