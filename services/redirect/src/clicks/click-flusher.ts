import { randomUUID } from 'node:crypto';
import type { RedisClient } from '@linkservice/lifecycle';
import type { BatchName, ClickKeys } from '@linkservice/link-cache';
import {
  LINK_HOST_SHARDS,
  batchName,
  callGroups,
  clickKeys,
  legacyClickKeys,
  parseBatchKey,
  visitorsKeyPrefix,
} from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { ClickBatch, ClickBatchesRepository, VisitorCount } from './click-batches.repository';
import { isLinkIdField, parseClickField } from '../analytics/click-analytics';
import { failedForConnection, nextReadyWithin } from '../redis-calls';
import type { ClickCounter } from './click-counter';

// For each (pending hash, batch set, fresh batch) of KEYS: atomically turns the pending hash into
// a batch of its own (redirects then start a new pending hash) and registers it as unapplied;
// answers every unapplied batch of those sets, so one round trip both takes this pass's clicks
// and shows leftovers of earlier passes or of dead replicas.
const TAKE_PENDING = `
local unapplied = {}
for i = 1, #KEYS, 3 do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    redis.call('RENAME', KEYS[i], KEYS[i + 2])
    redis.call('SADD', KEYS[i + 1], KEYS[i + 2])
  end
  for _, key in ipairs(redis.call('SMEMBERS', KEYS[i + 1])) do
    unapplied[#unapplied + 1] = key
  end
end
return unapplied`;

/**
 * At most this many fields of the pending hashes (a link's clicks, or clicks of a link with
 * their hour and dimension values) go into one Postgres statement; a pass with more applies its
 * batches in several (each whole). Bounds one statement's work and locks.
 */
const MAX_FIELDS_PER_STATEMENT = 20_000;

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
  redis: RedisClient;
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

/** A batch in Redis, with the click keys of the shard it is in. */
interface ShardBatch extends BatchName {
  keys: ClickKeys;
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
  /**
   * The click keys of every link host shard, and on a single Redis those of 0.1 (compat: a 0.1
   * redirect of a rolling upgrade still counts there; a cluster never ran 0.1).
   */
  private readonly shards: ClickKeys[];
  /** What the last pass applied: fields of the pending hashes, and statements it took. */
  lastPass = { fields: 0, statements: 0 };

  constructor(private readonly options: ClickFlusherOptions) {
    this.shards = Array.from({ length: LINK_HOST_SHARDS }, (_, shard) =>
      clickKeys(options.redisPrefix, shard),
    );
    if (!options.redis.isCluster) this.shards.push(legacyClickKeys(options.redisPrefix));
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
    const { counter } = this.options;
    // First, so a pass that fails below still reports drops a warning window held back.
    counter.reportDrops();
    await this.applyLocalBatches();
    // Click tokens Redis could not take with their clicks, now that it may again.
    await counter.storeUntokened();
    // Clicks whose call may or may not have counted them, counted once now (before the pending
    // hash is taken, so they go with this pass).
    await counter.reconcileUncertain();

    const now = Date.now();
    const due = (await this.takePending(now)).filter(
      (batch) => this.owned.has(batch.key) || now - batch.createdAt >= recoverOlderThanMs,
    );
    await this.applyBatches(due);
    await this.pruneLedger(now);
    // The pass took the pending hashes at `now`: every click counted before then is in Postgres.
    this.flushedUpTo = now;
  }

  /**
   * Takes every shard's pending hash into a fresh batch (TAKE_PENDING: one call for all shards
   * on a single Redis, one per shard on a cluster, in parallel) and answers every unapplied
   * batch of every shard.
   */
  private async takePending(now: number): Promise<ShardBatch[]> {
    const { redis } = this.options;
    const takes = this.shards.map((keys) => ({ keys, fresh: batchName(keys, now, randomUUID()) }));
    // Owned before the call: one that times out may still run (a frozen Redis runs it when it
    // resumes), and its batch is then this flusher's to apply on its next pass, not another
    // replica's to recover after recoverAfterMs.
    for (const { fresh } of takes) this.owned.add(fresh.key);
    const groups = redis.isCluster ? takes.map((take) => [take]) : [takes];
    const found = await Promise.all(
      groups.map(async (group) => {
        const keys = group.flatMap(({ keys, fresh }) => [keys.pending, keys.batches, fresh.key]);
        const unapplied = (await redis.eval(TAKE_PENDING, keys.length, ...keys)) as string[];
        // Answered: every earlier call on this shard has run or never will, so an owned batch of
        // these shards not listed was never made (or is applied).
        const listed = new Set(unapplied);
        for (const key of this.owned) {
          const inGroup = group.some(({ keys: shard }) => key.startsWith(shard.batchPrefix));
          if (inGroup && !listed.has(key)) this.owned.delete(key);
        }
        return unapplied.flatMap((key) => {
          for (const { keys: shard } of group) {
            const batch = parseBatchKey(shard, key);
            if (batch) return [{ ...batch, keys: shard }];
          }
          return [];
        });
      }),
    );
    return found.flat();
  }

  /**
   * Applies `due` in one Postgres statement (each batch once: the ledger), then removes them
   * from Redis: one MULTI per shard on a cluster, one for all on a single Redis.
   */
  private async applyBatches(due: ShardBatch[]): Promise<void> {
    if (due.length === 0) return;
    const { redis, batches, logger } = this.options;
    const contents = await Promise.all(
      due.map(async (batch): Promise<ClickBatch> => ({
        id: batch.id,
        counts: parseCounts(await redis.hgetall(batch.key)),
      })),
    );
    const nonEmpty = contents.filter((batch) => batch.counts.size > 0);
    const visitors = await this.visitorCounts(due, contents);
    // Bounded statements: at most MAX_FIELDS_PER_STATEMENT fields each (a batch is never split).
    const chunks = chunkByFields(nonEmpty, MAX_FIELDS_PER_STATEMENT);
    for (const [index, chunk] of chunks.entries()) {
      const claimed = await batches.apply(chunk, index === chunks.length - 1 ? visitors : []);
      for (const batch of chunk) {
        if (!claimed.has(batch.id))
          logger.info({ batch: batch.id }, 'click batch was already applied');
      }
    }
    this.lastPass = {
      fields: nonEmpty.reduce((sum, batch) => sum + batch.counts.size, 0),
      statements: chunks.length,
    };
    const groups = callGroups(due, (batch) => this.shards.indexOf(batch.keys), redis.isCluster);
    await Promise.all(
      groups.map((group) => {
        const tx = redis.multi();
        for (const batch of group) tx.del(batch.key).srem(batch.keys.batches, batch.key);
        return tx.exec();
      }),
    );
    for (const batch of due) this.owned.delete(batch.key);
  }

  /**
   * The unique visitors so far of every link and day `due` marks as having new visitors (one
   * PFCOUNT each, pipelined per shard): the day's figure is raised with the batches. The 0.1
   * layout's batches (compat) carry no analytics.
   */
  private async visitorCounts(
    due: readonly ShardBatch[],
    contents: readonly ClickBatch[],
  ): Promise<VisitorCount[]> {
    const { redis, redisPrefix } = this.options;
    const wanted = new Map<string, VisitorCount & { shard: number; key: string }>();
    due.forEach((batch, index) => {
      const shard = this.shards.indexOf(batch.keys);
      if (shard >= LINK_HOST_SHARDS) return;
      for (const field of contents[index].counts.keys()) {
        const parsed = parseClickField(field);
        if (parsed?.kind !== 'visitors') continue;
        const { linkId, day } = parsed;
        const key = visitorsKeyPrefix(redisPrefix, shard, day) + linkId;
        if (!wanted.has(key)) wanted.set(key, { linkId, day, visitors: 0, shard, key });
      }
    });
    const groups = callGroups([...wanted.values()], (item) => item.shard, redis.isCluster);
    await Promise.all(
      groups.map(async (group) => {
        const pipeline = redis.pipeline();
        for (const item of group) pipeline.pfcount(item.key);
        const results = (await pipeline.exec()) ?? [];
        group.forEach((item, index) => {
          const [error, count] = results[index] ?? [null, 0];
          if (error === null && typeof count === 'number') item.visitors = count;
        });
      }),
    );
    return [...wanted.values()]
      .filter((item) => item.visitors > 0)
      .map(({ linkId, day, visitors }) => ({ linkId, day, visitors }));
  }

  private async applyLocalBatches(): Promise<void> {
    const unrecorded = this.options.counter.takeUnrecorded();
    if (unrecorded.size > 0)
      this.localBatches.push({ id: `local:${randomUUID()}`, counts: unrecorded });
    if (this.localBatches.length === 0) return;
    await this.options.batches.apply(this.localBatches);
    this.localBatches.length = 0;
  }

  private async pruneLedger(now: number): Promise<void> {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await this.options.batches.pruneAppliedBefore(new Date(now - LEDGER_RETENTION_MS));
  }
}

/** `batches` in runs of at most `maxFields` fields (a batch with more is a run of its own). */
export function chunkByFields<T extends { counts: ReadonlyMap<string, number> }>(
  batches: readonly T[],
  maxFields: number,
): T[][] {
  const chunks: T[][] = [];
  let current: T[] = [];
  let fields = 0;
  for (const batch of batches) {
    if (current.length > 0 && fields + batch.counts.size > maxFields) {
      chunks.push(current);
      current = [];
      fields = 0;
    }
    current.push(batch);
    fields += batch.counts.size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

function parseCounts(hash: Record<string, string>): Map<string, number> {
  const counts = new Map<string, number>();
  for (const [linkId, value] of Object.entries(hash)) {
    const clicks = Number(value);
    if (Number.isSafeInteger(clicks) && clicks > 0) counts.set(linkId, clicks);
  }
  return counts;
}

/** The clicks of a batch's counts (its link id fields; the dimension fields count them again). */
function total(counts: Map<string, number>): number {
  let sum = 0;
  for (const [field, clicks] of counts) if (isLinkIdField(field)) sum += clicks;
  return sum;
}
