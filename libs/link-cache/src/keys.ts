import type { Environment } from '@linkservice/db';

/** One alias on one link host: what the redirect service resolves and what writers invalidate. */
export interface LinkRef {
  subdomainKey: string;
  environment: Environment;
  alias: string;
}

export interface LinkCacheKeys {
  /** The cached resolution (or the negative marker). */
  entry: string;
  /** Bumped by every invalidation; a fill only lands if it is unchanged since the lookup. */
  generation: string;
  /**
   * The host's generation, bumped by `invalidateHost` (a change every alias of the host
   * carries): a fill also only lands if it is unchanged since the lookup.
   */
  hostGeneration: string;
}

/**
 * `<prefix>:link-cache:<env>:<subdomainKey>:<alias>`, `<prefix>:link-cache-gen:…` and
 * `<prefix>:link-cache-host-gen:<env>:<subdomainKey>`. Neither a
 * subdomain key nor an alias can contain `:`, so distinct refs never share a key.
 */
export function linkCacheKeys(prefix: string, ref: LinkRef): LinkCacheKeys {
  const host = `${ref.environment}:${ref.subdomainKey}`;
  const id = `${host}:${ref.alias}`;
  return {
    entry: `${prefix}:link-cache:${id}`,
    generation: `${prefix}:link-cache-gen:${id}`,
    hostGeneration: `${prefix}:link-cache-host-gen:${host}`,
  };
}
