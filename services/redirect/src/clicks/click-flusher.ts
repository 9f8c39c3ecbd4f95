import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { BatchName, ClickKeys } from '@linkservice/link-cache';
import { batchName, clickKeys, parseBatchKey } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { ClickBatchesRepository } from './click-batches.repository';
import { failedForConnection, nextReadyWithin } from '../redis-calls';
import type { ClickCounter } from './click-counter';

// Atomically turns the pending hash into a batch of its own (redirects then start a new pending
// hash) and registers it as unapplied; answers every unapplied batch, so one round trip both
// takes this pass's clicks and shows leftovers of earlier passes or of dead replicas.
const TAKE_PENDING = `
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('RENAME', KEYS[1], KEYS[3])
  redis.call('SADD', KEYS[2], KEYS[3])
end
return redis.call('SMEMBERS', KEYS[2])`;

const LEDGER_RETENTION_MS = 24 * 60 * 60 * 1000;

/**
 * How long a last flush that failed for want of a connection is tried again, each time at the
 * client's next connection or after FINAL_FLUSH_RETRY_MS: a stop right after a Redis restart
 * finds the client between two connection attempts (ioredis tries at most 2 s apart) and must
 * still flush. A pass is safe to repeat (batches are applied once); the caller's grace period
 * bounds the stop as a whole.
 */
const FINAL_FLUSH_WINDOW_MS = 2_500;
const FINAL_FLUSH_RETRY_MS = 100;
const PRUNE_EVERY_MS = 60 * 60 * 1000;

export interface ClickFlusherOptions {
  redis: Redis;
  batches: ClickBatchesRepository;
  /** REDIS_PREFIX: the pending hash and the batches are under it (link-host-keys.ts). */
  redisPrefix: string;
  counter: ClickCounter;
  logger: Logger;
  intervalMs: number;
  /** A batch of another flusher left unapplied this long is presumed orphaned and applied here. */
  recoverAfterMs: number;
}

interface LocalBatch {
  id: string;
  counts: Map<string, number>;
}

/**
 * Moves counted clicks from Redis into link_clicks, one set-based statement per batch,
 * every `intervalMs`. Crash-safe hand-off: a batch is renamed out of the pending hash before it
 * is read and deleted only after Postgres committed it, and Postgres records each applied batch
 * id in the same statement, so a batch retried (after a crash between commit and delete, or by
 * another replica recovering it) is never counted twice. Several replicas can run at once:
 * RENAME gives each pending click to exactly one of them.
 */
export class ClickFlusher {
  /** Batches this flusher took and has not applied yet (retried every pass). */
  private readonly owned = new Set<string>();
  /** Clicks Redis could not take, awaiting a direct write to Postgres (same ledger). */
  private readonly localBatches: LocalBatch[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> = Promise.resolve();
  private stopped = false;
  private stopping: Promise<void> | undefined;
  private lastPrune = 0;
  /**
   * When the last completed pass took the pending clicks (or when the flusher was made): every
   * click counted in Redis before then is in Postgres. The flush lag is measured from it.
   */
  private flushedUpTo = Date.now();
  private readonly keys: ClickKeys;

  constructor(private readonly options: ClickFlusherOptions) {
    this.keys = clickKeys(options.redisPrefix);
  }

  /**
   * The age, in seconds, of the oldest click that may not be in Postgres yet: since the last
   * completed pass took the pending clicks (or since the flusher was made).
   */
  lagSeconds(now = Date.now()): number {
    return (now - this.flushedUpTo) / 1000;
  }

  /** Clicks Redis never took, taken from the counter and not yet written to Postgres. */
  get unsavedLocalClicks(): number {
    return this.localBatches.reduce((sum, batch) => sum + total(batch.counts), 0);
  }

  /** Applies every batch left over from before (a crash, a dead replica), then flushes periodically. */
  start(): void {
    this.schedule(0, 0);
  }

  /** One pass now, after any pass already running. Resolves when it is done. */
  flush(recoverOlderThanMs = this.options.recoverAfterMs): Promise<void> {
    const pass = this.running.then(() => this.pass(recoverOlderThanMs));
    this.running = pass.catch(() => undefined);
    return pass;
  }

  /**
   * Stops the timer and runs a last pass (tried again for a moment if it fails: a Redis restart),
   * so a clean shutdown leaves no clicks behind; then
   * drops the uncertain clicks still waiting for Redis (counted in `clicks_dropped`). Bounded
   * with Redis frozen too: each of the pass' Redis calls gives up at its command timeout. Once:
   * a second call resolves with the first.
   */
  stop(): Promise<void> {
    return (this.stopping ??= this.stopOnce());
  }

  private async stopOnce(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.finalFlush().catch((error: unknown) => {
      this.options.logger.error(
        { err: error },
        'final click flush failed; the batch stays in Redis for the next start',
      );
    });
    const lost = this.localBatches.reduce((sum, batch) => sum + total(batch.counts), 0);
    if (lost > 0) {
      this.options.logger.error({ clicks: lost }, 'clicks Redis never took could not be saved');
    }
    this.options.counter.dropUncertain();
    const tokens = this.options.counter.untokenedCount;
    if (tokens > 0) {
      this.options.logger.warn({ tokens }, 'click tokens Redis never took are dropped');
    }
  }

  private async finalFlush(): Promise<void> {
    const deadline = Date.now() + FINAL_FLUSH_WINDOW_MS;
    for (;;) {
      try {
        await this.flush();
        return;
      } catch (error) {
        // A slow or frozen Redis is not waited out here: its calls already took their timeouts.
        if (!failedForConnection(error) || Date.now() >= deadline) throw error;
      }
      await nextReadyWithin(this.options.redis, FINAL_FLUSH_RETRY_MS);
    }
  }

  private schedule(delayMs: number, recoverOlderThanMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.flush(recoverOlderThanMs).then(
        () => {
          this.schedule(this.options.intervalMs, this.options.recoverAfterMs);
        },
        (error: unknown) => {
          this.options.logger.warn({ err: error }, 'click flush failed; retrying next pass');
          // A failed start-up pass is retried as one: leftovers are still recovered at once.
          this.schedule(this.options.intervalMs, recoverOlderThanMs);
        },
      );
    }, delayMs);
    this.timer.unref();
  }

  private async pass(recoverOlderThanMs: number): Promise<void> {
    const { redis, counter } = this.options;
    const { keys } = this;
    // First, so a pass that fails below still reports drops a warning window held back.
    counter.reportDrops();
    await this.applyLocalBatches();
    // Click tokens Redis could not take with their clicks, now that it may again.
    await counter.storeUntokened();
    // Clicks whose call may or may not have counted them, counted once now (before the pending
    // hash is taken, so they go with this pass).
    await counter.reconcileUncertain();

    const now = Date.now();
    const fresh = batchName(keys, now, randomUUID());
    // Owned before the call: one that times out may still run (a frozen Redis runs it when it
    // resumes), and its batch is then this flusher's to apply on its next pass, not another
    // replica's to recover after recoverAfterMs.
    this.owned.add(fresh.key);
    const unapplied = (await redis.eval(
      TAKE_PENDING,
      3,
      keys.pending,
      keys.batches,
      fresh.key,
    )) as string[];
    // Answered: every earlier call of this connection has run or never will, so an owned batch
    // not listed was never made (or is applied).
    const listed = new Set(unapplied);
    for (const key of this.owned) if (!listed.has(key)) this.owned.delete(key);
    for (const key of unapplied) {
      const batch = parseBatchKey(keys, key);
      if (!batch) continue;
      const mine = this.owned.has(key);
      if (mine || now - batch.createdAt >= recoverOlderThanMs) await this.applyBatch(batch);
    }
    await this.pruneLedger(now);
    // The pass took the pending hash at `now`: every click counted before then is in Postgres.
    this.flushedUpTo = now;
  }

  private async applyBatch(batch: BatchName): Promise<void> {
    const { redis, batches, logger } = this.options;
    const counts = parseCounts(await redis.hgetall(batch.key));
    if (counts.size > 0) {
      const applied = await batches.apply(batch.id, counts);
      if (!applied) logger.info({ batch: batch.id }, 'click batch was already applied');
    }
    await redis.multi().del(batch.key).srem(this.keys.batches, batch.key).exec();
    this.owned.delete(batch.key);
  }

  private async applyLocalBatches(): Promise<void> {
    const unrecorded = this.options.counter.takeUnrecorded();
    if (unrecorded.size > 0)
      this.localBatches.push({ id: `local:${randomUUID()}`, counts: unrecorded });
    for (;;) {
      const batch = this.localBatches.at(0);
      if (!batch) break;
      await this.options.batches.apply(batch.id, batch.counts);
      this.localBatches.shift();
    }
  }

  private async pruneLedger(now: number): Promise<void> {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await this.options.batches.pruneAppliedBefore(new Date(now - LEDGER_RETENTION_MS));
  }
}

function parseCounts(hash: Record<string, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [linkId, value] of Object.entries(hash)) {
    const clicks = Number(value);
    if (Number.isSafeInteger(clicks) && clicks > 0) counts.set(linkId, clicks);
  }
  return counts;
}

function total(counts: Map<string, number>): number {
  let sum = 0;
  for (const clicks of counts.values()) sum += clicks;
  return sum;
}
