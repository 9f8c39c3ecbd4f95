import type { LinkCacheHost } from '@linkservice/link-cache';
import { LinkCache } from '@linkservice/link-cache';
import type { RedisClient } from '@linkservice/lifecycle';
import { createCluster } from '@linkservice/lifecycle';
import { Redis } from 'ioredis';
import type { LinkctlConfig } from './config';

/**
 * How long connecting, and then each command, may take. The database is the truth: a command
 * whose change is committed must finish whatever Redis does, so it never waits long for it.
 */
export const REDIS_TIMEOUT_MS = 2_000;

export type HostCacheOutcome =
  | { ok: true; dropped: number }
  /** One line: where Redis was looked for (never its password) and what went wrong. */
  | { ok: false; reason: string };

/**
 * The link host's resolution cache, as linkctl reaches it: Redis is opened on the first use
 * only (most commands never need it), with one connection attempt and short timeouts, and a
 * failure is a value for the command to warn about, not an error.
 */
export class LinkHostCache {
  private redis: RedisClient | undefined;
  /** Why the connection failed: connect() itself only says "Connection is closed." */
  private connectionError: Error | undefined;

  constructor(
    private readonly config: Pick<
      LinkctlConfig,
      'REDIS_URL' | 'REDIS_CLUSTER_NODES' | 'REDIS_PREFIX'
    >,
  ) {}

  /** Drops the cached resolutions of one link host (LinkCache.invalidateHost). */
  async invalidateHost(host: LinkCacheHost): Promise<HostCacheOutcome> {
    try {
      const redis = await this.connected();
      return {
        ok: true,
        dropped: await new LinkCache(redis, this.config.REDIS_PREFIX).invalidateHost(host),
      };
    } catch (error) {
      const reason = messageOf(this.connectionError ?? error);
      return { ok: false, reason: `Redis at ${this.location()}: ${reason}` };
    }
  }

  /** Drops the connection, if one was opened; every reply awaited has arrived by then. */
  close(): void {
    this.redis?.disconnect();
  }

  /** Where Redis is looked for: host:port (of the first node of a cluster), no password. */
  private location(): string {
    const first = this.config.REDIS_CLUSTER_NODES?.nodes[0];
    return first ? `${first.host}:${first.port} (cluster)` : safeLocation(this.config.REDIS_URL);
  }

  private async connected(): Promise<RedisClient> {
    if (this.redis) return this.redis;
    const options = {
      lazyConnect: true,
      connectionName: 'linkctl',
      connectTimeout: REDIS_TIMEOUT_MS,
      commandTimeout: REDIS_TIMEOUT_MS,
      // One attempt: the operator sees the warning and can run the command again.
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      enableOfflineQueue: false,
      // Closing a client whose socket died arms a timer of this length that nothing clears.
      disconnectTimeout: 200,
      // RESP2 replies, as every client of the stack (see REDIS_CONNECTION_DEFAULTS).
      protocol: 2,
    } as const;
    const cluster = this.config.REDIS_CLUSTER_NODES;
    const redis = cluster
      ? createCluster(cluster, options)
      : new Redis(this.config.REDIS_URL, options);
    // Kept for the warning; connect() and each command reject on their own.
    redis.on('error', (error: Error) => {
      this.connectionError ??= error;
    });
    this.redis = redis;
    // connectTimeout ends at the TCP connect: a peer that accepts and never answers the ready
    // check would keep connect() pending, so the whole connect is bounded too.
    await withinMs(redis.connect(), REDIS_TIMEOUT_MS, 'no answer');
    return redis;
  }
}

function withinMs<T>(work: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`${message} within ${ms} ms`));
    }, ms);
  });
  return Promise.race([work, deadline]).finally(() => {
    clearTimeout(timer);
  });
}

/** Duck-typed: an error from another realm (a jest sandbox) is no `instanceof Error` here. */
function messageOf(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'message' in error) {
    return String(error.message);
  }
  return String(error);
}

/** host:port, without user or password. */
function safeLocation(redisUrl: string): string {
  try {
    return new URL(redisUrl).host;
  } catch {
    return 'the configured REDIS_URL';
  }
}
