import { randomBytes } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { sendRequest } from '@linkservice/testing';

/** A phone's browser: a person following the link, so each redirecting GET counts a click. */
export const PERSON_USER_AGENT =
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36';

/**
 * What the load's clicks vary, so their analytics have more than one value per dimension: the
 * user agent (a person on Android or iOS, or a crawler, counted as a bot click), the referrer
 * and the UTM values of the tapped URL. Every one is a counted click (no link preview).
 */
const CLICK_VARIANTS: readonly { userAgent: string; referer?: string; query: string }[] = [
  { userAgent: PERSON_USER_AGENT, query: '' },
  {
    userAgent:
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
    referer: 'https://news.example/story',
    query: '?utm_source=news&utm_medium=email&utm_campaign=faults',
  },
  { userAgent: 'curl/8.5.0', query: '?utm_source=crawler' },
  { userAgent: PERSON_USER_AGENT, referer: 'https://social.example/', query: '?utm_source=social' },
];

export type RequestKind =
  'create' | 'batch' | 'get' | 'list' | 'redirect-cached' | 'redirect-uncached';

export const REQUEST_KINDS: readonly RequestKind[] = [
  'create',
  'batch',
  'get',
  'list',
  'redirect-cached',
  'redirect-uncached',
];

/** One entry of a creation as sent: a caller alias, or a generated one found by its marker title. */
export interface SentEntry {
  alias: string | null;
  marker: string;
}

/** What one request of the load was, and how (and how fast) it was answered. */
export interface RequestRecord {
  kind: RequestKind;
  startedAt: number;
  durationMs: number;
  /** 0 when no answer came (connection refused or reset, or the client's cap). */
  status: number;
  retryAfter: string | null;
  /** Creations: the limiter's `RateLimit-Remaining`. */
  rateLimitRemaining?: string | null;
  /** Why no answer came (status 0). */
  error?: string;
  /** Creations: every entry sent, in order. */
  entries?: SentEntry[];
  /** Redirects: the alias followed. */
  alias?: string;
  /** GET /links/{id}: the id read. */
  linkId?: string;
  body?: unknown;
}

export interface KnownLink {
  id: string;
  alias: string;
}

/** Where the load goes and what it may use: one app's live secret key and its link host. */
export interface LoadTarget {
  apiUrl: () => string;
  redirectUrl: () => string;
  linkHost: string;
  secret: string;
  /** Links whose alias was followed already: served from the link cache when Redis is there. */
  warm: KnownLink[];
  /** Links never followed yet; each is followed once, then joins `warm`. */
  cold: KnownLink[];
}

export interface LoadOptions {
  /** Requests started per second, all kinds together. */
  ratePerSecond: number;
  /** A request that got no answer in this time is given up (and recorded with status 0). */
  capMs: number;
  /** Unique per run and scenario: every alias and marker starts with it. */
  tag: string;
}

/** The mix: per 20 requests, how many of each kind. */
const MIX: readonly RequestKind[] = [
  'redirect-cached',
  'create',
  'get',
  'redirect-uncached',
  'redirect-cached',
  'list',
  'batch',
  'redirect-cached',
  'create',
  'get',
  'redirect-uncached',
  'redirect-cached',
  'create',
  'list',
  'redirect-cached',
  'get',
  'batch',
  'redirect-uncached',
  'create',
  'redirect-cached',
];

const BATCH_SIZE = 4;

/**
 * Mixed concurrent load at a fixed rate: requests start on schedule whatever the earlier ones
 * are doing (an open model, as real clients behave), so a stalled dependency shows as long answer
 * times instead of as fewer requests. Each request is recorded with its timing and answer.
 */
export class LoadDriver {
  private readonly records: RequestRecord[] = [];
  private readonly inFlight = new Set<Promise<void>>();
  private running = false;
  private loop: Promise<void> | undefined;
  private sequence = 0;
  private clicks = 0;

  constructor(
    private readonly target: LoadTarget,
    private readonly options: LoadOptions,
  ) {}

  start(): void {
    this.running = true;
    this.loop = this.schedule();
  }

  /** Stops starting requests and waits for every one in flight (each ends by its cap). */
  async stop(): Promise<RequestRecord[]> {
    this.running = false;
    await this.loop;
    while (this.inFlight.size > 0) await Promise.all([...this.inFlight]);
    return this.records;
  }

  private async schedule(): Promise<void> {
    const interval = 1000 / this.options.ratePerSecond;
    const startedAt = Date.now();
    for (let n = 0; this.running; n++) {
      const kind = MIX[n % MIX.length] ?? 'get';
      const request = this.send(kind).then((record) => {
        this.records.push(record);
      });
      this.inFlight.add(request);
      void request.finally(() => this.inFlight.delete(request));
      const next = startedAt + (n + 1) * interval;
      await delay(Math.max(0, next - Date.now()));
    }
  }

  private nextId(): string {
    this.sequence += 1;
    return `${this.options.tag}-${this.sequence}`;
  }

  /** Sends one request of `kind` and records it; never throws. */
  async send(kind: RequestKind): Promise<RequestRecord> {
    switch (kind) {
      case 'create': {
        const id = this.nextId();
        const entries = [{ alias: `${id}-a`, marker: `${id}-a` }];
        return this.call(kind, 'POST', '/links', { entries }, linkBody(entries[0]));
      }
      case 'batch': {
        const id = this.nextId();
        // Half caller aliases, half generated ones, found afterwards by their marker title.
        const entries = Array.from({ length: BATCH_SIZE }, (_, index) => ({
          alias: index % 2 === 0 ? `${id}-b${index}` : null,
          marker: `${id}-b${index}`,
        }));
        return this.call(
          kind,
          'POST',
          '/links/batch',
          { entries },
          { links: entries.map(linkBody) },
        );
      }
      case 'get': {
        const link = pick(this.target.warm);
        return this.call(kind, 'GET', `/links/${link.id}`, { linkId: link.id });
      }
      case 'list':
        return this.call(kind, 'GET', '/links?perPage=20', {});
      case 'redirect-cached':
        return this.follow(kind, pick(this.target.warm));
      case 'redirect-uncached': {
        const link = this.target.cold.shift();
        if (!link) return this.follow('redirect-cached', pick(this.target.warm));
        const record = await this.follow(kind, link);
        // Only a link that resolved was put in the cache; one refused (a frozen Postgres) is
        // not, and must not later pass for a cached one.
        if (record.status === 302) this.target.warm.push(link);
        else this.target.cold.push(link);
        return record;
      }
    }
  }

  private async call(
    kind: RequestKind,
    method: string,
    path: string,
    extra: Pick<RequestRecord, 'entries' | 'linkId'>,
    body?: unknown,
  ): Promise<RequestRecord> {
    const startedAt = Date.now();
    try {
      const res = await sendRequest(`${this.target.apiUrl()}${path}`, {
        method,
        key: this.target.secret,
        body,
        timeoutMs: this.options.capMs,
      });
      const record: RequestRecord = {
        kind,
        startedAt,
        durationMs: Date.now() - startedAt,
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        rateLimitRemaining: res.headers.get('ratelimit-remaining'),
        ...extra,
        body: res.body,
      };
      if (kind === 'create' || kind === 'batch') this.learnCreated(res.body);
      return record;
    } catch (error) {
      return failed(kind, startedAt, error, extra);
    }
  }

  private async follow(kind: RequestKind, link: KnownLink): Promise<RequestRecord> {
    const startedAt = Date.now();
    this.clicks += 1;
    const variant = CLICK_VARIANTS[this.clicks % CLICK_VARIANTS.length] ?? CLICK_VARIANTS[0];
    try {
      const res = await sendRequest(`${this.target.redirectUrl()}/${link.alias}${variant.query}`, {
        host: this.target.linkHost,
        headers: {
          'user-agent': variant.userAgent,
          ...(variant.referer !== undefined && { referer: variant.referer }),
        },
        timeoutMs: this.options.capMs,
      });
      return {
        kind,
        startedAt,
        durationMs: Date.now() - startedAt,
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        alias: link.alias,
      };
    } catch (error) {
      return failed(kind, startedAt, error, { alias: link.alias });
    }
  }

  /** Links created under load are followed later: never-followed aliases for uncached redirects. */
  private learnCreated(body: unknown): void {
    for (const link of createdLinks(body)) this.target.cold.push(link);
  }
}

/** The links a creation answer reports as created (single 201, or a batch's ok entries). */
export function createdLinks(body: unknown): KnownLink[] {
  if (typeof body !== 'object' || body === null) return [];
  if ('link' in body && isLink(body.link)) return [body.link];
  if ('results' in body && Array.isArray(body.results)) {
    return body.results.flatMap((entry: unknown) =>
      typeof entry === 'object' && entry !== null && 'ok' in entry && entry.ok === true
        ? 'link' in entry && isLink(entry.link)
          ? [entry.link]
          : []
        : [],
    );
  }
  return [];
}

function isLink(value: unknown): value is KnownLink {
  return (
    typeof value === 'object' &&
    value !== null &&
    'id' in value &&
    typeof value.id === 'string' &&
    'alias' in value &&
    typeof value.alias === 'string'
  );
}

function linkBody(entry: SentEntry): Record<string, unknown> {
  return {
    ...(entry.alias !== null && { alias: entry.alias }),
    webFallbackUrl: `https://example.com/${entry.marker}`,
    title: entry.marker,
    deepLinkData: { marker: entry.marker },
  };
}

function failed(
  kind: RequestKind,
  startedAt: number,
  error: unknown,
  extra: Partial<RequestRecord>,
): RequestRecord {
  const code = (error as NodeJS.ErrnoException).code;
  return {
    kind,
    startedAt,
    durationMs: Date.now() - startedAt,
    status: 0,
    retryAfter: null,
    error: code ?? (error instanceof Error ? error.message : String(error)),
    ...extra,
  };
}

function pick<T>(items: readonly T[]): T {
  const item = items[Math.floor(Math.random() * items.length)];
  if (item === undefined) throw new Error('nothing to pick from');
  return item;
}

/** A tag no other run or scenario shares, usable in an alias. */
export function uniqueTag(name: string): string {
  return `f${Date.now().toString(36)}${randomBytes(2).toString('hex')}-${name}`;
}
