import { hash, randomBytes } from 'node:crypto';
import type { RedisClient } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import { throttled } from '../throttled';

export const DAY_MS = 24 * 60 * 60 * 1000;
/** A day's salt is deleted this long after the day began: the end of the next day. */
export const SALT_LIFETIME_MS = 2 * DAY_MS;
/** Tomorrow's salt is loaded this long before midnight, so the first clicks of a day have it. */
const PRELOAD_MS = 5 * 60 * 1000;
const REFRESH_EVERY_MS = 60 * 1000;

/** When a day's salt, and the HyperLogLogs of its visitors, expire (epoch ms). */
export function visitorsExpireAt(day: number): number {
  return day * DAY_MS + SALT_LIFETIME_MS;
}

/** `<prefix>:{visitor-salt}:<UTC day>`: a day's salt, alone under its own hash tag. */
export function visitorSaltKey(prefix: string, day: number): string {
  return `${prefix}:{visitor-salt}:${day}`;
}

/** The UTC day (days since the epoch) of `at` (epoch ms). */
export function dayOf(at: number): number {
  return Math.floor(at / DAY_MS);
}

export interface VisitorSaltsOptions {
  redis: RedisClient;
  redisPrefix: string;
  logger: Logger;
  clock?: () => number;
}

/**
 * The daily salts unique visitors are counted under (the way Plausible does it): a visitor is
 * the HMAC of the client's address and user agent under the day's salt, 32 random bytes that
 * live only in Redis (shared by every replica: the first to need a day's salt makes it, SET NX)
 * and expire SALT_LIFETIME_MS after the day began; this process forgets a day's salt when the
 * day ends. So a visitor can be told apart from others on one day only, and once the salt is
 * gone nobody (us included) can recompute it or add to that day's count.
 *
 * Never on a request's path: salts are loaded at start and by a timer; a click of a day whose
 * salt is not loaded (Redis away) is counted with no visitor (it adds no unique).
 */
export class VisitorSalts {
  private readonly salts = new Map<number, HmacKey>();
  private readonly loading = new Map<number, Promise<void>>();
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private readonly warn: (message: string, error: unknown) => void;

  constructor(private readonly options: VisitorSaltsOptions) {
    this.clock = options.clock ?? Date.now;
    this.warn = throttled(60_000, (message, error) => {
      options.logger.warn({ err: error }, message);
    });
  }

  /**
   * The visitor of a click at `at`: base64url of the first 16 bytes of HMAC-SHA256(salt,
   * address NUL user agent); '' when the day's salt is not loaded (and asks for it).
   */
  visitorOf(at: number, address: string, userAgent: string): string {
    const day = dayOf(at);
    // A day that ended is forgotten at once, not at the next refresh (up to a minute later).
    if (day < dayOf(this.clock())) {
      this.salts.delete(day);
      return '';
    }
    const key = this.salts.get(day);
    if (key === undefined) {
      void this.load(day);
      return '';
    }
    return key.hmac(`${address}\0${userAgent}`).subarray(0, 16).toString('base64url');
  }

  /** Loads today's salt (and tomorrow's near midnight) and forgets past days'; then every minute. */
  start(): void {
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), REFRESH_EVERY_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  /** Resolves once today's salt (and, near midnight, tomorrow's) is loaded or failed to load. */
  async refresh(now = this.clock()): Promise<void> {
    const today = dayOf(now);
    for (const day of this.salts.keys()) if (day < today) this.salts.delete(day);
    const days = [today];
    if ((today + 1) * DAY_MS - now <= PRELOAD_MS) days.push(today + 1);
    await Promise.all(days.map((day) => this.load(day)));
  }

  private load(day: number): Promise<void> {
    // A past day's salt is never asked for again: SET NX would even make one if it was gone.
    if (this.salts.has(day) || day < dayOf(this.clock())) return Promise.resolve();
    let pending = this.loading.get(day);
    if (pending === undefined) {
      pending = this.fetch(day).finally(() => this.loading.delete(day));
      this.loading.set(day, pending);
    }
    return pending;
  }

  /** The day's salt: the one in Redis, or a new one stored there if none is (SET NX GET). */
  private async fetch(day: number): Promise<void> {
    const { redis, redisPrefix } = this.options;
    if (redis.status !== 'ready') return;
    const expiresAt = visitorsExpireAt(day);
    if (expiresAt <= this.clock()) return;
    const fresh = randomBytes(32).toString('base64');
    try {
      const existing = (await redis.call(
        'SET',
        visitorSaltKey(redisPrefix, day),
        fresh,
        'PXAT',
        String(expiresAt),
        'NX',
        'GET',
      )) as string | null;
      // Not kept past its day: a late answer for a day that ended is dropped.
      if (day >= dayOf(this.clock())) {
        this.salts.set(day, new HmacKey(Buffer.from(existing ?? fresh, 'base64')));
      }
    } catch (error) {
      this.warn(
        'could not load the visitor salt; clicks count no unique visitors meanwhile',
        error,
      );
    }
  }
}

/** Messages up to this size minus the 64-byte pad are hashed without allocating. */
const SCRATCH_BYTES = 2048;

/**
 * HMAC-SHA256 (RFC 2104) under one key, from the key's two padded blocks made once: two one-shot
 * hashes per message. The same digest as `createHmac('sha256', key)`, at a fifth of its cost on
 * the redirect's path (node's createHmac sets the key up again on every call).
 */
export class HmacKey {
  private readonly inner: Buffer;
  private readonly outer: Buffer;
  /** The inner pad followed by room for a message (an address and a user agent). */
  private readonly scratch: Buffer;
  /** The outer pad followed by the inner digest. */
  private readonly outerScratch: Buffer;

  constructor(key: Buffer) {
    const block = Buffer.alloc(64);
    (key.length > 64 ? hash('sha256', key, 'buffer') : key).copy(block);
    this.inner = Buffer.alloc(64);
    this.outer = Buffer.alloc(64);
    for (let i = 0; i < 64; i++) {
      this.inner[i] = block[i] ^ 0x36;
      this.outer[i] = block[i] ^ 0x5c;
    }
    this.scratch = Buffer.alloc(SCRATCH_BYTES);
    this.inner.copy(this.scratch);
    this.outerScratch = Buffer.alloc(64 + 32);
    this.outer.copy(this.outerScratch);
  }

  hmac(message: string): Buffer {
    // The padded key and the message are written into one reused buffer: no copies per call.
    const length = Buffer.byteLength(message);
    if (length > SCRATCH_BYTES - 64) {
      const inner = hash('sha256', Buffer.concat([this.inner, Buffer.from(message)]), 'buffer');
      return hash('sha256', Buffer.concat([this.outer, inner]), 'buffer');
    }
    this.scratch.write(message, 64);
    const inner = hash('sha256', this.scratch.subarray(0, 64 + length), 'buffer');
    inner.copy(this.outerScratch, 64);
    return hash('sha256', this.outerScratch, 'buffer');
  }
}
