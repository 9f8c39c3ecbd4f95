import type { RedisClusterConfig, RedisTarget } from '@linkservice/config';
import type { Logger } from '@linkservice/logger';
import type { ClusterOptions, RedisOptions } from 'ioredis';
import { Cluster, Redis } from 'ioredis';

/**
 * Settings every Redis connection of the stack starts from (BullMQ's too: pass them in its
 * connection options).
 * - connectTimeout: a Redis that does not answer fails a connect in 2 s, not ioredis' 10 s.
 * - disconnectTimeout: closing a client whose socket already died (Redis away, client between
 *   reconnect attempts) still arms ioredis' "destroy the socket if it has not closed" timer,
 *   and nothing ever clears it: a referenced timer of this length that keeps a stopping process
 *   or a jest worker alive. The default 2 s outlasts jest's 500 ms grace for its workers.
 * - protocol 2 (RESP2): ioredis 6 negotiates RESP3 by default. Every reply this code and
 *   BullMQ read (BullMQ's own tests still run on ioredis 5, RESP2) keeps the shape it was written
 *   against on RESP2; nothing here needs RESP3.
 * - retryStrategy: reconnect after 50 ms more per attempt, at most 2 s apart (ioredis 5's
 *   default; ioredis 6 waits up to ~5 s), so a Redis that comes back is used again within 2 s.
 */
export const REDIS_CONNECTION_DEFAULTS = {
  connectTimeout: 2_000,
  disconnectTimeout: 200,
  protocol: 2,
  retryStrategy: (attempt: number) => Math.min(attempt * 50, 2_000),
} as const satisfies RedisOptions;

/** A single Redis (REDIS_URL) or a Redis Cluster (REDIS_CLUSTER_NODES). */
export type RedisClient = Redis | Cluster;

/** The nodes that hold keys: a single Redis itself, or a cluster's masters (SCAN goes to each). */
export function masterNodes(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}

export interface RedisClientOptions extends RedisOptions {
  /** CLIENT SETNAME, and the `redis` field of this client's log lines. */
  connectionName: string;
  logger: Logger;
}

/**
 * A Redis client on REDIS_CONNECTION_DEFAULTS with its connection errors logged, so none can
 * surface as an unhandled 'error' event: a Cluster when REDIS_CLUSTER_NODES is set, else a
 * Redis on REDIS_URL. `options` override the defaults.
 */
export function createRedisClient(
  target: RedisTarget,
  { logger, ...options }: RedisClientOptions,
): RedisClient {
  const redis = target.REDIS_CLUSTER_NODES
    ? createCluster(target.REDIS_CLUSTER_NODES, options)
    : new Redis(target.REDIS_URL, { ...REDIS_CONNECTION_DEFAULTS, ...options });
  logRedisErrors(redis, logger, options.connectionName);
  return redis;
}

/**
 * How a cluster client finds its way after a failover or a resharding: a command answered
 * MOVED, ASK, TRYAGAIN or CLUSTERDOWN is sent again after these delays (ioredis refreshes the
 * slot map on MOVED), at most CLUSTER_REDIRECTIONS times, so no command waits longer than about
 * a failover (the cluster's node timeout plus an election) before it fails.
 */
const CLUSTER_RETRY_DELAY_MS = 100;
const CLUSTER_REDIRECTIONS = 16;

/**
 * A Redis Cluster client with the same behaviour per node as a single Redis client (the
 * options' offline queue, retries per request and command timeout), the caller's retry strategy
 * as the cluster's reconnect strategy, and every command on a master (replicas lag: a read
 * after a write must see it).
 */
export function createCluster(cluster: RedisClusterConfig, options: RedisOptions): Cluster {
  const { retryStrategy, enableOfflineQueue, lazyConnect, ...nodeOptions } = {
    ...REDIS_CONNECTION_DEFAULTS,
    ...options,
  };
  const clusterOptions: ClusterOptions = {
    redisOptions: {
      ...nodeOptions,
      ...(cluster.username ? { username: cluster.username } : {}),
      ...(cluster.password ? { password: cluster.password } : {}),
      ...(cluster.tls ? { tls: {} } : {}),
    },
    clusterRetryStrategy: retryStrategy,
    // The cluster's own, not its nodes': a lazy cluster connects on connect() or its first
    // command (linkctl's), one that is not connects at once.
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    scaleReads: 'master',
    slotsRefreshTimeout: REDIS_CONNECTION_DEFAULTS.connectTimeout,
    retryDelayOnFailover: CLUSTER_RETRY_DELAY_MS,
    retryDelayOnClusterDown: CLUSTER_RETRY_DELAY_MS,
    retryDelayOnTryAgain: CLUSTER_RETRY_DELAY_MS,
    retryDelayOnMoved: 0,
    maxRedirections: CLUSTER_REDIRECTIONS,
    // A TLS endpoint's certificate names the host, not the address the cluster announces.
    ...(cluster.tls
      ? {
          dnsLookup: (address, callback) => {
            callback(null, address);
          },
        }
      : {}),
  };
  return new Cluster(cluster.nodes, clusterOptions);
}

/** ioredis repeats the same error on every reconnect attempt; log a change, not each retry. */
function logRedisErrors(redis: RedisClient, logger: Logger, name: string): void {
  let lastMessage: string | undefined;
  redis.on('error', (error: Error) => {
    if (error.message === lastMessage) return;
    lastMessage = error.message;
    logger.warn({ err: error, redis: name }, 'redis connection error');
  });
  redis.on('ready', () => {
    if (lastMessage !== undefined) logger.info({ redis: name }, 'redis connection restored');
    lastMessage = undefined;
  });
}

/** QUIT when connected (lets pending replies arrive), otherwise just drop the socket. */
export async function closeRedis(redis: RedisClient): Promise<void> {
  if (redis.status === 'end') return;
  if (redis.status !== 'ready') {
    redis.disconnect();
    return;
  }
  await redis.quit().catch(() => {
    redis.disconnect();
  });
}
