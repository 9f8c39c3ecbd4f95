import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import type { CacheLookup, LinkCache, LinkRef, LinkResolution } from '@linkservice/link-cache';
import { linkCacheKeys } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import { throttled } from '../throttled';
import { findLinkResolution } from './link-resolution.repository';
import type { RedirectOutcome } from './redirect-rules';
import { redirectOutcome } from './redirect-rules';

/**
 * Resolves `<host>/<alias>` to an outcome. A hit costs one Redis round trip; a miss costs one
 * Postgres query, and concurrent misses for the same alias and cache generation share it.
 */
export class RedirectService {
  /** Keyed by cache key and generation: a lookup after an invalidation never joins an older query. */
  private readonly loading = new Map<string, Promise<LinkResolution | null>>();
  private readonly warn: (message: string, error: unknown) => void;

  constructor(
    private readonly db: Kysely<Database>,
    private readonly cache: LinkCache,
    private readonly redisPrefix: string,
    logger: Logger,
  ) {
    // Once per outage-ish, not once per redirect.
    this.warn = throttled(10_000, (message, error) => {
      logger.warn({ err: error }, message);
    });
  }

  async outcome(ref: LinkRef, userAgent: string | undefined): Promise<RedirectOutcome> {
    const resolution = await this.resolve(ref);
    return redirectOutcome(resolution, userAgent, Date.now());
  }

  async resolve(ref: LinkRef): Promise<LinkResolution | null> {
    let lookup: CacheLookup;
    try {
      lookup = await this.cache.lookup(ref);
    } catch (error) {
      // Redis away: redirects keep working straight from Postgres, uncached.
      this.warn('link cache unavailable; resolving from Postgres', error);
      return findLinkResolution(this.db, ref);
    }
    if (lookup.kind === 'hit') return lookup.resolution;

    const flightKey = `${linkCacheKeys(this.redisPrefix, ref).entry}#${lookup.generation ?? ''}`;
    const pending = this.loading.get(flightKey);
    if (pending) return pending;
    const load = this.loadAndFill(ref, lookup.generation).finally(() => {
      this.loading.delete(flightKey);
    });
    this.loading.set(flightKey, load);
    return load;
  }

  private async loadAndFill(
    ref: LinkRef,
    generation: string | null,
  ): Promise<LinkResolution | null> {
    const resolution = await findLinkResolution(this.db, ref);
    // The answer does not wait for the cache write; a failed write only costs a later miss.
    this.cache.fill(ref, generation, resolution).catch((error: unknown) => {
      this.warn('link cache fill failed', error);
    });
    return resolution;
  }
}
