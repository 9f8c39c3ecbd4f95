import type { RedisTarget } from '@linkservice/config';
import type { RedisClient } from '@linkservice/lifecycle';
import { closeRedis, createCluster, REDIS_CONNECTION_DEFAULTS } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import { throttledErrorLog } from '@linkservice/logger';
import { queueTelemetry } from '@linkservice/telemetry';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { CREATE_LINKS_QUEUE, creationQueuePrefix } from './creation-job.contract';
import { redisOptionsFromUrl } from './redis-options';

/**
 * How far back the events stream is read when the client starts. QueueEvents' default start,
 * `$`, is resolved only when its first XREAD reaches Redis, so an event written between startup
 * and that moment would be lost (bullmq#2874). Stream ids are Redis-clock milliseconds; the
 * margin covers clock skew. Missing an event would only delay an answer: the settle read-back
 * still finds the committed result.
 */
const EVENTS_REPLAY_MS = 5_000;

/** Reconnects back off up to this delay; with the connect timeout it bounds close() too. */
const RECONNECT_MAX_DELAY_MS = 1_000;

/**
 * The gateway's BullMQ objects for the creation queue: a Queue on a connection of its own that
 * fails fast while Redis is away, and the one long-lived QueueEvents, each with its 'error'
 * listener and a close that never waits for a Redis that is not there.
 */
export class CreationQueueConnection {
  readonly queue: Queue;
  readonly events: QueueEvents;
  /** The Queue's connection, and on a cluster the QueueEvents' too: ours to close. */
  private readonly connections: RedisClient[];
  private readonly connection: RedisClient;
  private closing: Promise<void> | undefined;

  constructor(options: { redis: RedisTarget; prefix: string; logger: Logger }) {
    // Reconnect quickly while open; stop once closing, or close() would wait for a Redis that is
    // not there (QueueEvents.close awaits its connection).
    const retryStrategy = (attempt: number): number | null =>
      this.closing ? null : Math.min(100 * 2 ** attempt, RECONNECT_MAX_DELAY_MS);

    // Fail fast while Redis is down (BullMQ "failing fast when Redis is down"): an HTTP request
    // must not sit in ioredis' offline queue; the settle answers it instead.
    const queueOptions = {
      ...REDIS_CONNECTION_DEFAULTS,
      retryStrategy,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectionName: `${options.prefix}:creation-client`,
    };
    // QueueEvents blocks (XREAD): BullMQ wants it to wait out reconnects, not fail after N.
    const eventsOptions = {
      ...REDIS_CONNECTION_DEFAULTS,
      retryStrategy,
      maxRetriesPerRequest: null,
    };
    const cluster = options.redis.REDIS_CLUSTER_NODES;
    const address = cluster ? null : redisOptionsFromUrl(options.redis.REDIS_URL);
    this.connection = cluster
      ? createCluster(cluster, queueOptions)
      : new Redis({ ...queueOptions, ...address });
    // BullMQ takes a cluster only as a client (its options name one node); a single Redis as
    // options, so it makes (and closes) the blocking connection itself.
    const eventsConnection = cluster ? createCluster(cluster, eventsOptions) : null;
    this.connections = eventsConnection ? [this.connection, eventsConnection] : [this.connection];
    // The Queue and QueueEvents re-emit connection errors as their own 'error' events, which
    // are logged below.
    for (const connection of this.connections) connection.on('error', () => undefined);
    const prefix = creationQueuePrefix(options.prefix, this.connection.isCluster);
    this.queue = new Queue(CREATE_LINKS_QUEUE, {
      connection: this.connection,
      prefix,
      // While tracing is on: a producer span per job, whose context the worker continues.
      telemetry: queueTelemetry(),
    });
    this.queue.on(
      'error',
      throttledErrorLog(options.logger, { message: 'creation queue: redis error' }),
    );
    this.events = new QueueEvents(CREATE_LINKS_QUEUE, {
      connection: eventsConnection ?? { ...eventsOptions, ...address },
      prefix,
      lastEventId: `${Date.now() - EVENTS_REPLAY_MS}-0`,
    });
    this.events.on(
      'error',
      throttledErrorLog(options.logger, { message: 'creation queue events: redis error' }),
    );
  }

  /**
   * Resolves once the Queue and QueueEvents are connected: until then the queue's connection
   * (no offline queue) fails every add, and a creation would answer 503. For the process's start.
   */
  async waitUntilReady(): Promise<void> {
    await Promise.all([this.queue.waitUntilReady(), this.events.waitUntilReady()]);
  }

  close(): Promise<void> {
    this.closing ??= (async () => {
      if (this.connection.status !== 'ready') {
        // Redis is away. The retry strategy now gives up at the next attempt; wait for that
        // while the Queue still listens: once closed it drops its listeners, and the late
        // failure of its pending connect would surface as an unhandled 'error'.
        await this.queue.waitUntilReady().catch(() => undefined);
      }
      await Promise.allSettled([this.events.close(), this.queue.close()]);
      // BullMQ leaves a connection it was given open; these are ours.
      await Promise.all(this.connections.map((connection) => closeRedis(connection)));
    })();
    return this.closing;
  }
}
