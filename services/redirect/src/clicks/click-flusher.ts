import { randomUUID } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import type { Logger } from '@linkservice/logger';
import { CLICK_TOKEN_FIELD_PREFIX } from '@linkservice/link-cache';
import type { ClickBatch } from './click-batches.repository';
import { applyClickBatch, pruneClickBatches } from './click-batches.repository';
import type { ClickCounter, PendingToken } from './click-counter';
import type { BatchName, ClickKeys } from './click-keys';
import { batchName, parseBatchKey } from './click-keys';

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
const PRUNE_EVERY_MS = 60 * 60 * 1000;

export interface ClickFlusherOptions {
  redis: Redis;
  db: Kysely<Database>;
  keys: ClickKeys;
  counter: ClickCounter;
  logger: Logger;
  intervalMs: number;
  /** A batch of another flusher left unapplied this long is presumed orphaned and applied here. */
  recoverAfterMs: number;
  /** A click token expires this long after its click (CLICK_TOKEN_TTL_SECONDS). */
  clickTokenTtlSeconds: number;
}

interface LocalBatch extends ClickBatch {
  id: string;
}

/**
 * Moves counted clicks from Redis into links.click_count, and their click tokens into
 * click_tokens, one set-based statement per batch, every `intervalMs`. Crash-safe hand-off: a batch is renamed out of the pending hash before it
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
  private lastPrune = 0;

  constructor(private readonly options: ClickFlusherOptions) {}

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

  /** Stops the timer and runs a last pass, so a clean shutdown leaves no clicks behind. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.flush().catch((error: unknown) => {
      this.options.logger.error(
        { err: error },
        'final click flush failed; the batch stays in Redis for the next start',
      );
    });
    const lost = this.localBatches.reduce((sum, batch) => sum + total(batch.counts), 0);
    if (lost > 0) {
      const tokens = this.localBatches.reduce((sum, batch) => sum + batch.tokens.length, 0);
      this.options.logger.error(
        { clicks: lost, tokens },
        'clicks Redis never took (and their click tokens) could not be saved',
      );
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
    const { redis, keys } = this.options;
    await this.applyLocalBatches();

    const now = Date.now();
    const fresh = batchName(keys, now, randomUUID());
    const unapplied = (await redis.eval(
      TAKE_PENDING,
      3,
      keys.pending,
      keys.batches,
      fresh.key,
    )) as string[];
    for (const key of unapplied) {
      const batch = parseBatchKey(keys, key);
      if (!batch) continue;
      const mine = key === fresh.key || this.owned.has(key);
      if (key === fresh.key) this.owned.add(key);
      if (mine || now - batch.createdAt >= recoverOlderThanMs) await this.applyBatch(batch);
    }
    await this.pruneLedger(now);
  }

  private async applyBatch(batch: BatchName): Promise<void> {
    const { redis, db, keys, logger } = this.options;
    // The flat reply: ioredis' hgetall would first build an object keyed by every field, which
    // costs about as much again as parsing them (a second's tokens are thousands of fields).
    const clicks = parseBatch(asStrings(await redis.call('HGETALL', batch.key)));
    if (clicks.counts.size > 0 || clicks.tokens.length > 0) {
      const applied = await applyClickBatch(
        db,
        batch.id,
        clicks,
        this.options.clickTokenTtlSeconds,
      );
      if (!applied) logger.info({ batch: batch.id }, 'click batch was already applied');
    }
    await redis.multi().del(batch.key).srem(keys.batches, batch.key).exec();
    this.owned.delete(batch.key);
  }

  private async applyLocalBatches(): Promise<void> {
    const unrecorded = this.options.counter.takeUnrecorded();
    if (unrecorded.counts.size > 0 || unrecorded.tokens.length > 0)
      this.localBatches.push({ id: `local:${randomUUID()}`, ...unrecorded });
    for (;;) {
      const batch = this.localBatches.at(0);
      if (!batch) break;
      await applyClickBatch(this.options.db, batch.id, batch, this.options.clickTokenTtlSeconds);
      this.localBatches.shift();
    }
  }

  private async pruneLedger(now: number): Promise<void> {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return;
    this.lastPrune = now;
    await pruneClickBatches(this.options.db, new Date(now - LEDGER_RETENTION_MS));
  }
}

const TOKEN_HASH = /^[0-9a-f]{64}$/;

/**
 * A batch hash as the redirects wrote it, as HGETALL's flat field, value, field, value… list:
 * link id -> clicks, and `t:<token hash>` -> `<linkId> <clickedAtMs>` per click token. A field
 * that is neither (a corrupted or foreign value) is skipped, so it can never make the batch's
 * statement fail and the batch stick.
 */
export function parseBatch(fieldsAndValues: readonly string[]): ClickBatch {
  const counts = new Map<string, number>();
  const tokens: PendingToken[] = [];
  for (let i = 0; i + 1 < fieldsAndValues.length; i += 2) {
    const field = fieldsAndValues[i];
    const value = fieldsAndValues[i + 1];
    if (field.startsWith(CLICK_TOKEN_FIELD_PREFIX)) {
      const token = parseToken(field.slice(CLICK_TOKEN_FIELD_PREFIX.length), value);
      if (token) tokens.push(token);
      continue;
    }
    const clicks = Number(value);
    if (Number.isSafeInteger(clicks) && clicks > 0) counts.set(field, clicks);
  }
  return { counts, tokens };
}

function parseToken(tokenHash: string, value: string): PendingToken | null {
  const space = value.indexOf(' ');
  const linkId = value.slice(0, space);
  const clickedAt = Number(value.slice(space + 1));
  if (
    !TOKEN_HASH.test(tokenHash) ||
    space < 1 ||
    !Number.isSafeInteger(clickedAt) ||
    clickedAt <= 0
  )
    return null;
  return { tokenHash, linkId, clickedAt };
}

function asStrings(reply: unknown): string[] {
  if (!Array.isArray(reply) || !reply.every((item) => typeof item === 'string')) {
    throw new Error('HGETALL answered something other than a list of strings');
  }
  return reply;
}

function total(counts: ReadonlyMap<string, number>): number {
  let sum = 0;
  for (const clicks of counts.values()) sum += clicks;
  return sum;
}
