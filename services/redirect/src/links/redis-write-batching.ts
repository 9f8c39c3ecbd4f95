import type { Redis } from 'ioredis';

type Stream = Redis['stream'];

/**
 * Returns `batchWrites()`: call it before sending a command on the request path. It corks the
 * client's socket until the end of this event-loop turn (setImmediate runs right after the turn's
 * I/O callbacks), so the lookups of every redirect handled in one turn leave in one write and
 * Redis answers them in one read, instead of a loopback write and read each. Loopback socket calls
 * were half of the service's CPU per redirect; measured at 10 connections (4 alternating rounds),
 * 0.038 -> 0.034 ms CPU per redirect, lower in every round. ioredis writes a command to `redis.stream` synchronously once it is ready;
 * otherwise (connecting, no offline queue) nothing is written and nothing is corked.
 */
export function redisWriteBatcher(redis: Redis): () => void {
  let corked: Stream | undefined;
  const release = () => {
    const stream = corked;
    corked = undefined;
    stream?.uncork();
  };
  return () => {
    if (corked !== undefined || redis.status !== 'ready') return;
    corked = redis.stream;
    corked.cork();
    setImmediate(release);
  };
}
