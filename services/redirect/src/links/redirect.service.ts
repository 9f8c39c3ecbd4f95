import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import { withQueryDeadline } from '@linkservice/db';
import type { CountingLookup, LinkCache, LinkRef, LinkResolution } from '@linkservice/link-cache';
import type { RedisFailure } from '@linkservice/link-cache';
import { linkCacheKeys, redisFailureOf } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { ClickCounter } from '../clicks/click-counter';
import type { ClickToken } from '../clicks/click-token';
import { ClickTokenMinter } from '../clicks/click-token';
import { throttled } from '../throttled';
import { findLinkResolution } from './link-resolution.repository';
import type { LinkRequest, RedirectOutcome } from './redirect-rules';
import { countsClick, redirectOutcome } from './redirect-rules';
import type { LinkCacheStats } from '../metrics';
import { clientOf } from './user-agents';

/** A request for `<host>/<alias>`, as the rules see it. */
export interface LinkHostRequest {
  ref: LinkRef;
  userAgent: string | undefined;
  /** The request target's raw query, without `?`; empty when there is none. */
  query: string;
  /** A GET; only a GET counts a click and mints a click token. */
  isGet: boolean;
}

/**
 * How a click still to be counted came to be: `fresh` (the lookup answered and did not count
 * it), `not-sent` (the lookup was never sent: Redis disconnected, or skipped during a backoff),
 * `uncertain` (the lookup failed and may have counted it, or may still).
 */
type UncountedClick = 'fresh' | RedisFailure;

/**
 * Resolves `<host>/<alias>` to an outcome and counts the click of a person's GET, with the click
 * token minted for it. A hit costs one Redis round trip, click and token included (the cache's
 * lookup script stores both, in one call with the other redirects of the same event-loop turn);
 * a miss costs one Postgres query, shared by concurrent misses of the same alias and cache
 * generation, and the click and its token are then written together in one round trip.
 *
 * Redis failing: a redirect resolves from Postgres instead, after at most one command timeout
 * (REDIS_COMMAND_TIMEOUT_MS), and after a timeout the redirects of the next moment skip Redis
 * (RedisBackoff). The click token is the click's idempotency key (Redis counts a click only
 * with its token's key set NX), so a click whose lookup timed out is never counted again on the
 * fallback: it waits for the flusher to reconcile it (ClickCounter), with no second Redis call
 * on the request.
 */
export class RedirectService {
  /** Keyed by cache key and generation: a lookup after an invalidation never joins an older query. */
  private readonly loading = new Map<string, Promise<LinkResolution | null>>();
  private readonly warn: (message: string, error: unknown) => void;
  private readonly tokens = new ClickTokenMinter();

  constructor(
    private readonly db: Kysely<Database>,
    private readonly cache: LinkCache,
    private readonly clicks: ClickCounter,
    private readonly redisPrefix: string,
    logger: Logger,
    /**
     * All of one Postgres lookup, waiting for a connection included (DATABASE_QUERY_TIMEOUT_MS):
     * the pool's connect and query timeouts would otherwise add up.
     */
    private readonly lookupBudgetMs: number,
    /** Told whether each lookup was served by the link cache (`linkservice_link_cache_requests_total`). */
    private readonly cacheStats?: LinkCacheStats,
  ) {
    // Once per outage-ish, not once per redirect.
    this.warn = throttled(10_000, (message, error) => {
      logger.warn({ err: error }, message);
    });
  }

  /**
   * The outcome at this moment. A person's GET of a link that resolves counts a click before
   * this resolves (in Redis; in memory when Redis cannot take it, for the flusher to write to
   * Postgres or, when the Redis call may have run, to reconcile in Redis), so a click the client
   * saw survives a clean shutdown (except uncertain ones Redis does not answer for before it:
   * counted in `clicks_dropped`), and its token is stored with it. Whether the client is a preview
   * fetcher is decided first: a preview's lookup counts nothing and it mints no token.
   */
  async outcome({ ref, userAgent, query, isGet }: LinkHostRequest): Promise<RedirectOutcome> {
    const client = clientOf(userAgent);
    // Minted before the lookup: on a hit the lookup script stores it with the click. Unused
    // (a 404 or 410) it is simply dropped; it was never stored.
    const token = isGet && client !== 'previewer' ? this.tokens.mint() : null;
    // One clock for the lookup script and the rules, so both agree on expiry.
    const now = Date.now();
    const request = { client, query, clickToken: token?.token ?? null };
    if (!this.clicks.backoff.allows(now)) {
      // A Redis call timed out a moment ago: not another timeout for this redirect.
      this.cacheStats?.miss();
      const resolution = await this.fromPostgres(ref);
      return this.decide(resolution, request, now, token, 'not-sent');
    }
    let found: CountingLookup;
    try {
      found = await this.cache.lookupCountingClick(
        ref,
        token
          ? {
              hash: this.clicks.pendingKey,
              at: now,
              tokenHash: token.hash,
              tokenTtlMs: this.clicks.tokenTtlMs,
            }
          : null,
      );
    } catch (error) {
      // Redis away: redirects keep working straight from Postgres, uncached.
      const failure = redisFailureOf(error);
      if (failure === 'uncertain') this.clicks.backoff.trip();
      this.warn('link cache unavailable; resolving from Postgres', error);
      this.cacheStats?.miss();
      const resolution = await this.fromPostgres(ref);
      return this.decide(resolution, request, now, token, failure);
    }
    const { lookup, counted } = found;
    if (lookup.kind === 'hit') this.cacheStats?.hit();
    else this.cacheStats?.miss();
    const resolution =
      lookup.kind === 'hit' ? lookup.resolution : await this.load(ref, lookup.generation);
    return this.decide(resolution, request, now, counted ? null : token, 'fresh');
  }

  /**
   * The outcome; `uncounted`: the token of a click still to be counted if the link resolves,
   * and `how` it is still uncounted.
   */
  private async decide(
    resolution: LinkResolution | null,
    request: LinkRequest,
    now: number,
    uncounted: ClickToken | null,
    how: UncountedClick,
  ): Promise<RedirectOutcome> {
    const outcome = redirectOutcome(resolution, request, now);
    if (uncounted && countsClick(outcome)) {
      const click = { linkId: outcome.linkId, tokenHash: uncounted.hash, at: now };
      // An uncertain lookup may have counted it (or may yet): no second call, reconciled later.
      if (how === 'uncertain') this.clicks.addUncertain(click);
      else await this.clicks.record(click);
    }
    return outcome;
  }

  private fromPostgres(ref: LinkRef): Promise<LinkResolution | null> {
    return withQueryDeadline(this.lookupBudgetMs, () => findLinkResolution(this.db, ref));
  }

  private load(ref: LinkRef, generation: string | null): Promise<LinkResolution | null> {
    const flightKey = `${linkCacheKeys(this.redisPrefix, ref).entry}#${generation ?? ''}`;
    const pending = this.loading.get(flightKey);
    if (pending) return pending;
    const load = this.loadAndFill(ref, generation).finally(() => {
      this.loading.delete(flightKey);
    });
    this.loading.set(flightKey, load);
    return load;
  }

  private async loadAndFill(
    ref: LinkRef,
    generation: string | null,
  ): Promise<LinkResolution | null> {
    const resolution = await this.fromPostgres(ref);
    // The answer does not wait for the cache write; a failed write only costs a later miss.
    this.cache.fill(ref, generation, resolution).catch((error: unknown) => {
      this.warn('link cache fill failed', error);
    });
    return resolution;
  }
}
