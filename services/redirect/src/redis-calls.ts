import { createHash } from 'node:crypto';
import type { RedisClient } from '@linkservice/lifecycle';

/**
 * What a failed Redis call may have done, for a caller that must not do it twice (counting a
 * click):
 * - `not-sent`: the command never left this process, so it certainly did not run: the client
 *   was not `ready` when it was called (it is then not even tried), or ioredis refused to write
 *   it (no offline queue, stream not writable);
 * - `uncertain`: it may have run, or may still run later: a command timeout (the connection,
 *   and the command with it, is still there: a frozen Redis runs it when it resumes), a
 *   connection lost with the command in flight (ioredis may resend it after reconnecting), an
 *   error reply, a reply that could not be read, anything else.
 */
export type RedisFailure = 'not-sent' | 'uncertain';

/** ioredis' rejection of a command it did not write (enableOfflineQueue: false, no stream). */
export const NOT_WRITABLE_MESSAGE =
  "Stream isn't writeable and enableOfflineQueue options is false";

export function classifyRedisFailure(readyBeforeCall: boolean, error: unknown): RedisFailure {
  if (!readyBeforeCall) return 'not-sent';
  if (error instanceof Error && error.message === NOT_WRITABLE_MESSAGE) return 'not-sent';
  return 'uncertain';
}

/** A failed Redis call, with what it may have done; `cause` is ioredis' error. */
export class RedisCallError extends Error {
  constructor(
    readonly failure: RedisFailure,
    cause: unknown,
  ) {
    super(
      `redis call failed (${failure}): ${cause instanceof Error ? cause.message : String(cause)}`,
      { cause },
    );
    this.name = 'RedisCallError';
  }
}

/** What `error` says a call may have done: anything but a RedisCallError is uncertain. */
export function redisFailureOf(error: unknown): RedisFailure {
  return error instanceof RedisCallError ? error.failure : 'uncertain';
}

/**
 * Runs `call` only when `redis` is ready, and rejects with a RedisCallError whatever it did:
 * `not-sent` at once when the client is not ready (a disconnected client without an offline
 * queue would refuse it anyway), otherwise as `classifyRedisFailure` says.
 */
export async function callRedis<T>(
  redis: Pick<RedisClient, 'status'>,
  call: () => Promise<T>,
): Promise<T> {
  if (redis.status !== 'ready') {
    throw new RedisCallError('not-sent', new Error(`redis is ${redis.status}`));
  }
  try {
    return await call();
  } catch (error) {
    throw new RedisCallError(classifyRedisFailure(true, error), error);
  }
}

/**
 * Whether a call failed because the client had no connection (it was not sent, or its connection
 * closed under it), rather than because Redis was slow or answered an error: worth trying again
 * once the client has reconnected.
 */
export function failedForConnection(error: unknown): boolean {
  if (redisFailureOf(error) === 'not-sent') return true;
  return (
    error instanceof Error &&
    (error.message === NOT_WRITABLE_MESSAGE || error.message === 'Connection is closed.')
  );
}

/** A Lua script sent by its SHA-1 (EVALSHA), and in full only when Redis does not know it yet. */
export class RedisScript {
  private readonly sha: string;

  constructor(private readonly source: string) {
    this.sha = createHash('sha1').update(source).digest('hex');
  }

  /** A NOSCRIPT reply means it did not run: sending it in full then runs it once. */
  async run(
    redis: RedisClient,
    numKeys: number,
    keysAndArgs: (string | number)[],
  ): Promise<unknown> {
    try {
      return await redis.evalsha(this.sha, numKeys, ...keysAndArgs);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
      return redis.eval(this.source, numKeys, ...keysAndArgs);
    }
  }
}

/** One wait per client for its connection, however many checks ask meanwhile. */
const connectionWaits = new WeakMap<RedisClient, Promise<void>>();

/**
 * A PING once the client is connected, for a dependency check at start-up: a client without an
 * offline queue fails every command while it connects ("Stream isn't writeable"), so a PING sent
 * then fails whether Redis is there or not. This one waits for the connection instead (bounded
 * by the caller's timeout) and rejects with the connection attempt's own error (ECONNREFUSED…)
 * when it fails.
 */
export async function pingOnceConnected(redis: RedisClient): Promise<unknown> {
  // A client closed for good never connects again: its PING fails at once.
  if (redis.status !== 'ready' && redis.status !== 'end') {
    let wait = connectionWaits.get(redis);
    if (!wait) {
      wait = new Promise<void>((resolve, reject) => {
        const onReady = (): void => {
          redis.off('error', onError);
          resolve();
        };
        const onError = (error: Error): void => {
          redis.off('ready', onReady);
          reject(error);
        };
        redis.once('ready', onReady);
        redis.once('error', onError);
      }).finally(() => {
        connectionWaits.delete(redis);
      });
      connectionWaits.set(redis, wait);
    }
    await wait;
  }
  return redis.ping();
}

/**
 * Resolves at the client's next 'ready' (a reconnect), after `ms`, or at once when it is closed
 * for good, whichever is first; never rejects. Not at once when it reads 'ready': a connection
 * that just dropped still reads 'ready' until ioredis has seen it close.
 */
export async function nextReadyWithin(redis: RedisClient, ms: number): Promise<void> {
  if (redis.status === 'end') return;
  await new Promise<void>((resolve) => {
    const done = (): void => {
      clearTimeout(timer);
      redis.off('ready', done);
      redis.off('end', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    redis.once('ready', done);
    redis.once('end', done);
  });
}
