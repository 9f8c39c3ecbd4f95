import { readScanMarker } from '@linkservice/contracts';
import { withQueryDeadline } from '@linkservice/db';
import type { LinkCache, LinkRef, LinkResolution } from '@linkservice/link-cache';
import { linkCacheKeys, replicaFenceOf, shardOfLink } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { ClickCounter, ClickState } from '../clicks/click-counter';
import type { ClickToken } from '../clicks/click-token-minter';
import { ClickTokenMinter } from '../clicks/click-token-minter';
import type { CountingLookup, CountingLookups } from '../clicks/counting-lookups';
import type { RedisBackoff } from '../redis-backoff';
import { redisFailureOf } from '../redis-calls';
import { throttled } from '../throttled';
import type { LinkResolutionRepository } from './link-resolution.repository';
import type { LinkRequest, RedirectOutcome } from './redirect-rules';
import { countsClick, redirectOutcome } from './redirect-rules';
import type { LinkCacheStats } from '../metrics';
import { clientOf } from './user-agents';
import type { ClickAnalytics, ClickDescription, ClickRequest } from '../analytics/click-analytics';

/** A request for `<host>/<alias>`, as the rules see it. */
export interface LinkHostRequest {
  ref: LinkRef;
  userAgent: string | undefined;
  /**
   * The request target's raw query, without `?`; empty when there is none. With the scan marker
   * (`qr=1`, a QR code's URL) the click is a scan: the marker is dropped here, before the rules
   * (query passthrough) or the analytics see the query.
   */
  query: string;
  /** A GET; only a GET counts a click and mints a click token. */
  isGet: boolean;
  /** What the click's analytics are derived from (read, reduced and dropped: never kept). */
  client?: Omit<ClickRequest, 'userAgent' | 'query' | 'source'>;
}

export interface RedirectServiceOptions {
  links: LinkResolutionRepository;
  /** Filled after a miss; RedirectService reads it through `lookups`. */
  cache: LinkCache;
  /** The lookup of each request, which counts the click of a cache hit in the same call. */
  lookups: CountingLookups;
  clicks: ClickCounter;
  /** When requests skip Redis after a timeout; ClickCounter follows the same one. */
  backoff: RedisBackoff;
  /** REDIS_PREFIX: concurrent misses of one cache entry share a Postgres query. */
  redisPrefix: string;
  logger: Logger;
  /**
   * All of one Postgres lookup, waiting for a connection included (DATABASE_QUERY_TIMEOUT_MS):
   * the pool's connect and query timeouts would otherwise add up.
   */
  lookupBudgetMs: number;
  /** Told whether each lookup was served by the link cache (`linkservice_link_cache_requests_total`). */
  cacheStats?: LinkCacheStats;
  /** Reduces a counted click to its analytics, counted with it; null: analytics off. */
  analytics: ClickAnalytics | null;
}

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
 * fallback: it waits for the flusher to reconcile it, with no second Redis call on the request.
 * What happens to a click is ClickCounter.recordClick's to say.
 */
export class RedirectService {
  /** Keyed by cache key and generation: a lookup after an invalidation never joins an older query. */
  private readonly loading = new Map<string, Promise<LinkResolution | null>>();
  private readonly warn: (message: string, error: unknown) => void;
  private readonly tokens = new ClickTokenMinter();

  constructor(private readonly options: RedirectServiceOptions) {
    // Once per outage-ish, not once per redirect.
    this.warn = throttled(10_000, (message, error) => {
      options.logger.warn({ err: error }, message);
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
  async outcome({
    ref,
    userAgent,
    query: rawQuery,
    isGet,
    client: from,
  }: LinkHostRequest): Promise<RedirectOutcome> {
    const client = clientOf(userAgent);
    // A scan counts like a tap (same click, same token); only its analytics tell it apart.
    const { scanned, query } = readScanMarker(rawQuery);
    // Minted before the lookup, in the alias' shard: on a hit the lookup script stores it with
    // the click. Unused
    // (a 404 or 410) it is simply dropped; it was never stored.
    const shard = shardOfLink(ref);
    const token = isGet && client !== 'previewer' ? this.tokens.mint(shard) : null;
    // One clock for the lookup script and the rules, so both agree on expiry.
    const now = Date.now();
    const request = { client, query, clickToken: token?.token ?? null };
    const { analytics } = this.options;
    const description =
      token && analytics
        ? analytics.describe(
            {
              address: from?.address,
              referrer: from?.referrer,
              countryHeader: from?.countryHeader,
              userAgent,
              query,
              source: scanned ? 'qr' : 'link',
            },
            now,
          )
        : null;
    const { cacheStats } = this.options;
    if (!this.options.backoff.allows(now)) {
      // A Redis call timed out a moment ago: not another timeout for this redirect.
      cacheStats?.miss();
      const resolution = await this.fromPostgres(ref);
      return this.decide(resolution, request, now, token, description, 'not-sent');
    }
    let found: CountingLookup;
    try {
      found = await this.options.lookups.lookUp(
        ref,
        token ? { tokenHash: token.hash, at: now, analytics: description } : null,
        shard,
      );
    } catch (error) {
      // Redis away: redirects keep working straight from Postgres, uncached.
      const failure = redisFailureOf(error);
      if (failure === 'uncertain') this.options.backoff.trip();
      this.warn('link cache unavailable; resolving from Postgres', error);
      cacheStats?.miss();
      const resolution = await this.fromPostgres(ref);
      return this.decide(resolution, request, now, token, description, failure);
    }
    const { lookup, counted } = found;
    if (lookup.kind === 'hit') cacheStats?.hit();
    else cacheStats?.miss();
    const resolution =
      lookup.kind === 'hit' ? lookup.resolution : await this.load(ref, lookup.generation);
    return this.decide(resolution, request, now, token, description, counted ? 'counted' : 'fresh');
  }

  /** The outcome; the click of `token`, in `state`, is recorded if the outcome counts one. */
  private async decide(
    resolution: LinkResolution | null,
    request: LinkRequest,
    now: number,
    token: ClickToken | null,
    analytics: ClickDescription | null,
    state: ClickState,
  ): Promise<RedirectOutcome> {
    const outcome = redirectOutcome(resolution, request, now);
    if (token && countsClick(outcome)) {
      const click = { linkId: outcome.linkId, tokenHash: token.hash, at: now, analytics };
      await this.options.clicks.recordClick(click, state);
    }
    return outcome;
  }

  /**
   * The link from Postgres. `freshAfter` (ms): a replica may answer only if it has applied what
   * was committed before then; without Redis there is none, and the app's write fence (also in
   * Redis) is unknown too, so the primary answers.
   */
  private fromPostgres(ref: LinkRef, freshAfter?: number): Promise<LinkResolution | null> {
    return withQueryDeadline(this.options.lookupBudgetMs, () =>
      this.options.links.find(ref, freshAfter),
    );
  }

  private load(ref: LinkRef, generation: string | null): Promise<LinkResolution | null> {
    const flightKey = `${linkCacheKeys(this.options.redisPrefix, ref).entry}#${generation ?? ''}`;
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
    // The miss' generation is when the alias or its host was last invalidated, after a change
    // committed: a replica that has not applied it would put the old row back in the cache. The
    // app's write fence covers the gateway's changes; this also covers linkctl's host-wide ones
    // (the iOS deferred page).
    const resolution = await this.fromPostgres(ref, replicaFenceOf(generation) ?? undefined);
    // The answer does not wait for the cache write; a failed write only costs a later miss.
    this.options.cache.fill(ref, generation, resolution).catch((error: unknown) => {
      this.warn('link cache fill failed', error);
    });
    return resolution;
  }
}
