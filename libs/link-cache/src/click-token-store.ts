import { hash } from 'node:crypto';
import type { RedisClient } from '@linkservice/lifecycle';
import { callGroups, clickTokenKey, shardOfTokenHash } from './link-host-keys';
import { legacyClickTokenKey } from './link-host-keys.compat';

/**
 * Click tokens (app-interface.md): the `ls_click` value the link host mints with every counted
 * click, which an app hands back after its install to find the link that was tapped. They live
 * in Redis, one key per token that expires with the token (CLICK_TOKEN_TTL_SECONDS): minting is
 * one more command inside the round trip that counts the click, and nothing is written to
 * Postgres for the (many) tokens that are never used. This module knows the stored value (the key
 * is `clickTokenKey`, link-host-keys.ts), for the link host that writes it and the app interface
 * that reads it.
 *
 * Only the token's SHA-256 is ever stored (in the key's name, behind the token's first
 * character, which names its shard and is not random), and with it the link clicked,
 * which names its app and environment, and the click time: no address, no user agent.
 */

/**
 * The stored form of a token: its first character, then the SHA-256 of its text, base64url
 * (44 characters in all). The link host mints every token with the character of its alias'
 * shard first (`ClickTokenMinter`), a character that carries no randomness, so the stored form
 * names the shard its key is in (`shardOfTokenHash`) and reveals nothing secret. One-shot
 * `crypto.hash` (Node 20.12+): a third of createHash's cost, on the redirect's hot path.
 */
export function hashClickToken(token: string | Buffer): string {
  const first = typeof token === 'string' ? token.charAt(0) : token.toString('latin1', 0, 1);
  return `${first}${hash('sha256', token, 'base64url')}`;
}

/**
 * The name a token travels under: the query parameter of a copied link URL (`?ls_click=`) and
 * the pair in a Play install referrer (`ls_click=<token>`). Of several, the last counts.
 */
export const CLICK_TOKEN_PARAMETER = 'ls_click';

/** What a token's key holds. */
export interface ClickTokenRecord {
  linkId: string;
  /** The click's time, epoch ms (the redirect's clock for that request). */
  clickedAt: number;
}

/** `<linkId> <clickedAtMs>`; the redirect's counting script (COUNT_CLICK_LUA) writes the same. */
export function clickTokenValue({ linkId, clickedAt }: ClickTokenRecord): string {
  return `${linkId} ${clickedAt}`;
}

/**
 * What a used-up or erased token's key holds until it expires (`ClickTokenStore.forget`): not a
 * record, so it matches nothing, but the key stays, so a click counted late under that token
 * (the link host's counting is SET NX per token) finds it and counts nothing.
 */
export const CLICK_TOKEN_TOMBSTONE = '-';

/** The record a token's key holds, or null for anything that is not one (a tombstone too). */
export function parseClickTokenValue(value: string): ClickTokenRecord | null {
  if (value === CLICK_TOKEN_TOMBSTONE) return null;
  const space = value.indexOf(' ');
  if (space < 1) return null;
  const clickedAt = Number(value.slice(space + 1));
  if (!Number.isSafeInteger(clickedAt) || clickedAt <= 0) return null;
  return { linkId: value.slice(0, space), clickedAt };
}

/**
 * What can be a token's text: base62, as minted (22 characters), with room for a longer minter.
 * Anything else is not looked up.
 */
const CLICK_TOKEN = /^[0-9A-Za-z]{16,64}$/;

export function isClickToken(text: string): boolean {
  return CLICK_TOKEN.test(text);
}

/**
 * `forget`'s script: each existing token key becomes a tombstone with the time it had left
 * (XX: an expired or never-stored token gets no key; KEEPTTL: it still expires when the record
 * would have). KEYS: the token keys.
 */
export const FORGET_CLICK_TOKENS = `
for _, key in ipairs(KEYS) do
  redis.call('SET', key, '${CLICK_TOKEN_TOMBSTONE}', 'XX', 'KEEPTTL')
end
return #KEYS`;

/**
 * The app interface's side of click tokens: reading the records of tokens an install report
 * presents, and removing those it used up. Which token an install may use up is decided in
 * Postgres (install_clicks.token_hash is unique); Redis only says which tokens were minted, for
 * which link and when, until they expire. A token's key is in the shard of its hash
 * (link-host-keys.ts): on a cluster, one call per shard involved (in parallel).
 */
export class ClickTokenStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** The record of each hash, in order (null: never minted, expired or removed). */
  async find(tokenHashes: readonly string[]): Promise<(ClickTokenRecord | null)[]> {
    const records = new Map<string, ClickTokenRecord | null>();
    await Promise.all(
      this.groups(tokenHashes).map(async (keys) => {
        const values = await this.redis.mget(keys.map((k) => k.key));
        keys.forEach(({ hash }, i) => {
          const value = values[i];
          // A 0.1 key (compat) only counts where no current one was found (a token is minted
          // under one layout: at most one of its two keys exists).
          if (value !== null && !records.get(hash)) {
            records.set(hash, parseClickTokenValue(value));
          }
        });
      }),
    );
    return tokenHashes.map((hash) => records.get(hash) ?? null);
  }

  /**
   * Removes the records of tokens that were used up or erased: each becomes a tombstone
   * (`CLICK_TOKEN_TOMBSTONE`) until it would have expired, which `find` reads as no record. Not
   * a delete: the link host counts a click only if its token's key does not exist, and a click
   * it counts late (a Redis call that timed out and ran after all, or its reconciliation) must
   * neither count again nor bring the record back.
   */
  async forget(tokenHashes: readonly string[]): Promise<void> {
    await Promise.all(
      this.groups(tokenHashes).map((keys) =>
        this.redis.eval(FORGET_CLICK_TOKENS, keys.length, ...keys.map((k) => k.key)),
      ),
    );
  }

  /** The token keys of `tokenHashes` (with 0.1's on a single Redis), one group per call. */
  private groups(tokenHashes: readonly string[]): { hash: string; key: string }[][] {
    const cluster = this.redis.isCluster;
    const keys = tokenHashes.flatMap((hash) => {
      const key = { hash, key: clickTokenKey(this.prefix, hash) };
      return cluster ? [key] : [key, { hash, key: legacyClickTokenKey(this.prefix, hash) }];
    });
    return callGroups(keys, ({ hash }) => shardOfTokenHash(hash), cluster);
  }
}
