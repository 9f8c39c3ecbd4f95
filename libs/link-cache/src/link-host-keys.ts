import type { Environment } from '@linkservice/db';

/**
 * Every Redis key of the link host, in one file: its resolution cache (filled by the redirect,
 * invalidated by the gateway, the worker and linkctl) and its clicks (counted and flushed by the
 * redirect; click tokens read by the gateway's app interface). Each name is
 * `<keyspace>:<kind>:…`, where neither a subdomain key, an alias, a token hash nor a batch id
 * contains `:`, so distinct things never share a key.
 *
 * Redis Cluster runs a script or a MULTI only on keys of one slot, and the redirect's touch many
 * together: a lookup call the entries and generations of up to 64 aliases of any hosts, the
 * pending-clicks hash and the click tokens; a flush pass the pending hash, its batch and the batch
 * set; an invalidation the keys of many aliases. Every key starts with `keyspace(prefix)`, so a
 * hash tag there (`{${prefix}}`) puts all of them in one slot: that is the one change a move to
 * Cluster makes in this file (the keys are renamed by it: data in flight must move or drain).
 */
function keyspace(prefix: string): string {
  return prefix;
}

/** One alias on one link host: what the redirect service resolves and what writers invalidate. */
export interface LinkRef {
  subdomainKey: string;
  environment: Environment;
  alias: string;
}

/** One link host: an app's live host or its `-test` host. */
export type LinkCacheHost = Pick<LinkRef, 'subdomainKey' | 'environment'>;

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
 * `<keyspace>:link-cache:<env>:<subdomainKey>:<alias>`, `<keyspace>:link-cache-gen:…` and
 * `<keyspace>:link-cache-host-gen:<env>:<subdomainKey>`.
 */
export function linkCacheKeys(prefix: string, ref: LinkRef): LinkCacheKeys {
  const space = keyspace(prefix);
  const host = `${ref.environment}:${ref.subdomainKey}`;
  const id = `${host}:${ref.alias}`;
  return {
    entry: `${space}:link-cache:${id}`,
    generation: `${space}:link-cache-gen:${id}`,
    hostGeneration: `${space}:link-cache-host-gen:${host}`,
  };
}

/** What every entry key of one host starts with (`invalidateHost` SCANs for it). */
export function linkCacheHostEntryPrefix(prefix: string, host: LinkCacheHost): string {
  return linkCacheKeys(prefix, { ...host, alias: '' }).entry;
}

/**
 * `<keyspace>:click-token:<SHA-256 of the token, base64url>`: a click token's record (see
 * click-token-store.ts), set with the click it was minted for.
 */
export function clickTokenKey(prefix: string, tokenHash: string): string {
  return `${keyspace(prefix)}:click-token:${tokenHash}`;
}

/**
 * The redirect's click counting:
 * - `pending`: hash link id -> clicks not yet handed to a flusher (HINCRBY per redirect);
 * - `batch:<createdAtMs>:<uuid>`: a hash some flusher took over by renaming `pending`;
 * - `batches`: the set of batch keys not yet applied, so leftovers can be found without SCAN.
 */
export interface ClickKeys {
  pending: string;
  batches: string;
  batchPrefix: string;
}

export function clickKeys(prefix: string): ClickKeys {
  const space = keyspace(prefix);
  return {
    pending: `${space}:clicks:pending`,
    batches: `${space}:clicks:batches`,
    batchPrefix: `${space}:clicks:batch:`,
  };
}

export interface BatchName {
  key: string;
  /** `<createdAtMs>:<uuid>`: unique, and the id recorded in link_click_batches. */
  id: string;
  createdAt: number;
}

export function batchName(keys: ClickKeys, createdAt: number, uuid: string): BatchName {
  const id = `${createdAt}:${uuid}`;
  return { key: `${keys.batchPrefix}${id}`, id, createdAt };
}

export function parseBatchKey(keys: ClickKeys, key: string): BatchName | null {
  if (!key.startsWith(keys.batchPrefix)) return null;
  const id = key.slice(keys.batchPrefix.length);
  const createdAt = Number(id.slice(0, id.indexOf(':')));
  return Number.isSafeInteger(createdAt) ? { key, id, createdAt } : null;
}
