/**
 * REMOVE IN 0.3.0. The link host's keys before they were sharded (0.1), `<prefix>:link-cache:…`,
 * `<prefix>:click-token:…` and `<prefix>:clicks:…`, still written by 0.1 processes during a
 * rolling upgrade on a single Redis (a cluster never ran 0.1: there is nothing to read there,
 * and these keys would cross slots). Until every process runs 0.2:
 * - the flusher also takes and applies 0.1's pending clicks and batches (no click is lost);
 * - invalidations also drop 0.1's entries (a 0.1 redirect never serves a stale one);
 * - the app interface also finds (and uses up) tokens a 0.1 redirect minted.
 * Upgrade writers (gateway, worker, linkctl) before the redirect: a 0.1 writer invalidates only
 * 0.1's keys. Once the last 0.1 process is gone and an hour (the tokens' TTL) has passed, the
 * old keys are empty or expired; then this file and its callers go.
 */
import type { ClickKeys, LinkCacheKeys, LinkRef } from './link-host-keys';
import { clickKeysIn, linkCacheKeysIn } from './link-host-keys';

export function legacyLinkCacheKeys(prefix: string, ref: LinkRef): LinkCacheKeys {
  return linkCacheKeysIn(prefix, ref);
}

/** 0.1 named a token by its SHA-256 alone (43 characters): without the shard character. */
export function legacyClickTokenKey(prefix: string, tokenHash: string): string {
  const sha256 = tokenHash.length === SHARDED_HASH_LENGTH ? tokenHash.slice(1) : tokenHash;
  return `${prefix}:click-token:${sha256}`;
}

/** A stored form of 0.2 (`hashClickToken`): the shard character and 43 of SHA-256. */
const SHARDED_HASH_LENGTH = 44;

export function legacyClickKeys(prefix: string): ClickKeys {
  return clickKeysIn(prefix);
}

/** The alias whose 0.1 entry key `key` is, or null. */
export function aliasOfLegacyEntryKey(
  prefix: string,
  host: Pick<LinkRef, 'subdomainKey' | 'environment'>,
  key: string,
): string | null {
  const start = `${prefix}:link-cache:${host.environment}:${host.subdomainKey}:`;
  return key.startsWith(start) ? key.slice(start.length) : null;
}
