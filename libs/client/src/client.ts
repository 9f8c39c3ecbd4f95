import type { BatchChunk, BatchInterruption, MergedBatchReport } from './batches';
import { chunkIdempotencyKey, mergeReports, shiftReport, splitIntoChunks } from './batches';
import type { LinkServiceError, RateLimitInfo } from './errors';
import {
  LinkServiceError as LinkServiceErrorCtor,
  isCreateOutcomeUnknown,
  isLinkServiceError,
} from './errors';
import type { AbortSignalLike, Answer, FetchLike } from './http';
import { answerInfoOf, readAnswer } from './http';
import { checkIdempotencyKey, webCryptoKeyGenerator } from './idempotency';
import type { RequestKind, RetryPolicy } from './retry';
import { DEFAULT_RETRY_POLICY, isRetryable, retryDelayMs } from './retry';
import type {
  Analytics,
  AnalyticsParams,
  AnalyticsResponse,
  AppResponse,
  ArchivedLinkResponse,
  BatchReport,
  Environment,
  Link,
  LinkCreateInput,
  LinkAnalyticsParams,
  LinkList,
  LinkPatchInput,
  LinkQrParams,
  LinkResponse,
  ListLinksParams,
  ListWebhookDeliveriesParams,
  Webhook,
  WebhookCreateInput,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookDeliveryResponse,
  WebhookList,
  WebhookPatchInput,
  WebhookResponse,
  WebhookSecretResponse,
} from './types';
import { CLIENT_VERSION } from './version';

export interface LinkServiceClientOptions {
  /**
   * The API's base URL, the spec's `{base_url}`: `https://api.example.com/api/v1`. The gateway's
   * URL without `/api/v1` is taken too (the client adds it); a path prefix of your proxy is kept.
   */
  baseUrl: string;
  /** A secret key, `ls_sk_live_…` or `ls_sk_test_…`. Keep it on your servers; never log it. */
  apiKey: string;
  /** Defaults to the global `fetch`; pass one for tests or another HTTP stack. */
  fetch?: FetchLike;
  /**
   * How long one attempt waits for the gateway's answer; 30 000 ms by default, longer than the
   * gateway's own bound on a creation (10 s by default, and a repeated Idempotency-Key waits up
   * to that long for the first request), so the client does not give up on an answer to come.
   */
  timeoutMs?: number;
  /** Retry policy; see `RetryPolicy`. `{ maxRetries: 0 }` turns retrying off. */
  retry?: Partial<RetryPolicy>;
  /**
   * Appended to the client's `User-Agent` (`linkservice-client-js/<version>`), e.g.
   * `acme-backend/2.3`. Not sent where a browser would refuse the header.
   */
  userAgent?: string;
  /**
   * Makes the Idempotency-Key of each create the caller gave none for. Default: random UUIDs of
   * the runtime's Web Crypto. `null`, or no Web Crypto (Node 18 without a flag), sends no key by
   * itself, and then creates without a caller's key are never retried. On Node 18 pass
   * `() => require('node:crypto').randomUUID()`.
   */
  generateIdempotencyKey?: (() => string) | null;
}

/** Per call. */
export interface RequestOptions {
  /** Cancels the call, retries and waits included; the call rejects with the signal's reason. */
  signal?: AbortSignalLike;
  /** Overrides the client's `timeoutMs` for each attempt of this call. */
  timeoutMs?: number;
  /** Overrides the client's `retry.maxRetries` for this call. */
  maxRetries?: number;
}

export interface CreateOptions extends RequestOptions {
  /**
   * 1–255 printable ASCII characters naming this create, e.g. your order id. The gateway answers
   * every request with the same key and body (for 24 hours) with the first one's answer. Default:
   * a fresh key per call (reused by that call's retries), when the client can make one. Give
   * your own when you may have to repeat the call yourself after a failure of unknown outcome.
   */
  idempotencyKey?: string;
}

export interface CreateInBatchesOptions extends CreateOptions {
  /**
   * The run key, printable ASCII: chunk n is sent under `<idempotencyKey>:<n>`, which must stay
   * within 255 characters (a TypeError before anything is sent otherwise). Default: one the client makes, returned as the report's
   * `idempotencyKey`. Give your own (e.g. `import-<id>`) when the call itself may not return, as
   * when `signal` aborts it or the process stops: only then can you re-run it safely.
   */
  idempotencyKey?: string;
  /** Entries per request, 1 to 100 (the gateway's maximum, and the default). */
  chunkSize?: number;
  /** Called after each chunk's answer, e.g. for progress. */
  onChunk?: (chunk: BatchChunk) => void;
}

/** What the gateway's headers said about a create. */
export interface ResponseInfo {
  /** `X-Request-Id` of the answer (the last attempt's). */
  requestId: string | undefined;
  /** `RateLimit-*`: creations left in this hour. */
  rateLimit: RateLimitInfo | undefined;
  /** True when this is the stored answer of an earlier request with the same Idempotency-Key. */
  replayed: boolean;
  /** Attempts this call took (1 without retries). */
  attempts: number;
}

/** `createLink`: the created link (201) and what the answer's headers said. */
export interface CreateLinkResult extends LinkResponse, ResponseInfo {}

/** `createLinks`: the batch's report (201 or 207) and what the answer's headers said. */
export interface CreateLinksResult extends BatchReport, ResponseInfo {
  /** 201: every entry created; 207: anything else, even nothing created. */
  status: 201 | 207;
  /** With `stoppedEarly.reason` `rate_limited`: seconds until the creation limit resets. */
  retryAfter: number | undefined;
}

const DEFAULT_TIMEOUT_MS = 30_000;

/** `<prefix>_sk_<environment>_<random>`, the spec's secret key form. */
const SECRET_KEY = /^[A-Za-z0-9]+_sk_(live|test)_[A-Za-z0-9]+$/;

/**
 * The `Authorization` value of each client, outside the object: logging, inspecting or
 * serialising a client never shows its key. (Not a `#private` field: declarations that name one
 * fail to compile for consumers targeting ES5.)
 */
const AUTHORIZATION = new WeakMap<LinkServiceClient, string>();

interface ApiRequest {
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE';
  path: string;
  /** A 2xx body read as the image it is (`GET /links/{linkId}/qr`), not as JSON. */
  image?: 'text' | 'bytes';
  body?: unknown;
  kind: RequestKind;
  idempotencyKey?: string;
}

/**
 * The secret-key API of linkservice (`/api/v1`), one method per endpoint. Every method resolves
 * with the gateway's answer or rejects with a `LinkServiceError` (a union by `slug`). Retries
 * follow `RetryPolicy` and `RequestKind`: a create is retried only under an Idempotency-Key.
 */
export class LinkServiceClient {
  /** The environment of the key: every link it makes or sees lives there. */
  readonly environment: Environment;
  /** The API's base URL, ending in `/api/v1`. */
  readonly apiUrl: string;
  private readonly fetch: FetchLike;
  private readonly timeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly userAgent: string | undefined;
  private readonly generateKey: (() => string) | undefined;

  constructor(options: LinkServiceClientOptions) {
    const base = options.baseUrl.replace(/\/+$/, '');
    if (!/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/i.test(base)) {
      throw new TypeError(`baseUrl must be an http(s) URL without query: ${options.baseUrl}`);
    }
    this.apiUrl = base.endsWith('/api/v1') ? base : `${base}/api/v1`;
    const key = (options.apiKey as string | undefined) ?? '';
    // The messages never repeat the key: they end up in logs.
    if (/_pk_/.test(key)) {
      throw new TypeError(
        'apiKey is a publishable key; this client takes a secret key (ls_sk_…). Apps use @linkservice/app-sdk.',
      );
    }
    const environment = SECRET_KEY.exec(key)?.[1];
    if (environment === undefined) {
      throw new TypeError('apiKey must be a secret key (ls_sk_live_… or ls_sk_test_…)');
    }
    this.environment = environment as Environment;
    AUTHORIZATION.set(this, `Bearer ${key}`);
    const given = options.fetch;
    if (!given && typeof (globalThis as { fetch?: unknown }).fetch !== 'function') {
      throw new TypeError('no global fetch here: pass options.fetch');
    }
    // Always called as a plain function: some runtimes refuse a fetch called as another
    // object's method.
    this.fetch = given ? (url, init) => given(url, init) : (url, init) => fetch(url, init);
    this.timeoutMs = positive(options.timeoutMs, DEFAULT_TIMEOUT_MS, 'timeoutMs');
    this.retry = {
      maxRetries: wholeOrZero(
        options.retry?.maxRetries,
        DEFAULT_RETRY_POLICY.maxRetries,
        'retry.maxRetries',
      ),
      baseDelayMs: positive(
        options.retry?.baseDelayMs,
        DEFAULT_RETRY_POLICY.baseDelayMs,
        'retry.baseDelayMs',
      ),
      maxDelayMs: positive(
        options.retry?.maxDelayMs,
        DEFAULT_RETRY_POLICY.maxDelayMs,
        'retry.maxDelayMs',
      ),
    };
    // Browsers refuse (or silently drop) a script's User-Agent; elsewhere it names the client.
    const inBrowser = typeof (globalThis as { document?: unknown }).document !== 'undefined';
    this.userAgent = inBrowser
      ? undefined
      : [`linkservice-client-js/${CLIENT_VERSION}`, options.userAgent].filter(Boolean).join(' ');
    this.generateKey =
      options.generateIdempotencyKey === null
        ? undefined
        : (options.generateIdempotencyKey ?? webCryptoKeyGenerator());
  }

  /** `GET /app`: the app the key belongs to, and the key's environment. */
  async getApp(options?: RequestOptions): Promise<AppResponse> {
    return (await this.send<AppResponse>({ method: 'GET', path: '/app', kind: 'read' }, options))
      .body;
  }

  /** `GET /apps/{appId}`: the same as `getApp`; any id but the key's own app is `not_found`. */
  async getAppById(appId: string, options?: RequestOptions): Promise<AppResponse> {
    const path = `/apps/${encodeURIComponent(appId)}`;
    return (await this.send<AppResponse>({ method: 'GET', path, kind: 'read' }, options)).body;
  }

  /**
   * `POST /links`: creates one link (201). Fails with `invalid_request` (`fields` names each bad
   * field, an alias in use included; `planLimitReached` when the plan's allowance is used up),
   * `rate_limited`, `invalid_body`, … Sent under an Idempotency-Key (yours or a fresh one), so
   * retries after a lost answer return the same link instead of creating another. A failure
   * after the retries does not always mean nothing was created: after `timeout`, `network`,
   * `unexpected_response`, `conflict`, `unavailable` or `internal` the link may exist
   * (`isCreateOutcomeUnknown`). To find out without creating twice, send the same input again
   * under the same key: pass your own `idempotencyKey` when you may need to (a fresh key the
   * client made is not returned with the error).
   */
  async createLink(input: LinkCreateInput, options: CreateOptions = {}): Promise<CreateLinkResult> {
    const answer = await this.send<LinkResponse>(
      this.createRequest('/links', input, options.idempotencyKey),
      options,
    );
    return {
      link: answer.body.link,
      requestId: answer.requestId,
      rateLimit: answer.rateLimit,
      replayed: answer.replayed,
      attempts: answer.attempts,
    };
  }

  /**
   * `POST /links/batch`: 1 to 100 entries in one request, tried in order; one bad entry does not
   * stop the others. The report lists every tried entry by `index`; a batch that met the
   * creation limit or the plan allowance stops (`stoppedEarly`) and counts the rest in
   * `notAttempted`. More than 100 entries: `createLinksInBatches`. As with `createLink`, a
   * failure whose outcome is unknown (`isCreateOutcomeUnknown`) may have created some or all of
   * the entries; repeat the same entries under the same `idempotencyKey` to get the report.
   */
  async createLinks(
    entries: readonly LinkCreateInput[],
    options: CreateOptions = {},
  ): Promise<CreateLinksResult> {
    return this.batchCall(
      this.createRequest('/links/batch', { links: entries }, options.idempotencyKey),
      options,
    );
  }

  /**
   * Any number of entries through `POST /links/batch`, in chunks of at most 100 sent one after
   * the other (in order, and within the creation limit), merged into one report whose indexes
   * are positions in `entries`. Every chunk is sent under an Idempotency-Key: chunk n under
   * `<run key>:<n>`, the run key being `idempotencyKey` or, without it, one the client makes
   * (returned as the report's `idempotencyKey`), so running the same entries again under that
   * key creates nothing twice. A chunk that stops early (creation limit, plan allowance) ends
   * the run: later chunks are not sent and their entries count as `notAttempted`. A chunk that
   * fails as a whole (after its retries) ends it too, as `interrupted`, without losing the
   * report of the chunks before it; when that failure leaves open whether the chunk created
   * links (a timeout, a 503, …) its entries count as `unknown`, not `notAttempted`. An abort
   * through `signal` rejects the whole call with the signal's reason (the report, and a run
   * key the client made, are lost with it).
   */
  async createLinksInBatches(
    entries: readonly LinkCreateInput[],
    options: CreateInBatchesOptions = {},
  ): Promise<MergedBatchReport> {
    const { chunkSize, onChunk, idempotencyKey, ...requestOptions } = options;
    const chunks = splitIntoChunks(entries, chunkSize);
    // One key for the whole run, even when the caller gave none: a chunk's own fresh key would
    // be lost with the call, and re-running an interrupted import could then create twice.
    const runKey = idempotencyKey ?? this.generateKey?.();
    if (runKey !== undefined) {
      checkIdempotencyKey(chunkIdempotencyKey(runKey, Math.max(chunks.length - 1, 0)));
    }
    const reported: { size: number; report: BatchReport }[] = [];
    const sent: BatchChunk[] = [];
    let interrupted: BatchInterruption | undefined;
    let retryAfter: number | undefined;
    let offset = 0;
    for (const [chunkIndex, chunk] of chunks.entries()) {
      const chunkKey = runKey === undefined ? undefined : chunkIdempotencyKey(runKey, chunkIndex);
      let result: CreateLinksResult;
      try {
        const request = this.createRequest('/links/batch', { links: chunk }, chunkKey ?? null);
        result = await this.batchCall(request, requestOptions);
      } catch (error) {
        if (!isLinkServiceError(error)) throw error;
        interrupted = {
          atIndex: offset,
          size: chunk.length,
          error,
          outcomeUnknown: isCreateOutcomeUnknown(error),
          idempotencyKey: chunkKey,
        };
        break;
      }
      const info: BatchChunk = {
        offset,
        size: chunk.length,
        status: result.status,
        idempotencyKey: chunkKey,
        requestId: result.requestId,
        replayed: result.replayed,
        rateLimit: result.rateLimit,
      };
      sent.push(info);
      reported.push({ size: chunk.length, report: shiftReport(result, offset) });
      onChunk?.(info);
      offset += chunk.length;
      if (result.stoppedEarly) {
        retryAfter = result.retryAfter;
        break;
      }
    }
    const unknownEntries = interrupted?.outcomeUnknown ? interrupted.size : 0;
    const merged: MergedBatchReport = {
      ...mergeReports(entries.length, reported, unknownEntries),
      idempotencyKey: runKey,
      chunks: sent,
    };
    if (interrupted) merged.interrupted = interrupted;
    if (retryAfter !== undefined) merged.retryAfter = retryAfter;
    return merged;
  }

  /** `GET /links`: one page of the key's links, with the pagination. */
  async listLinks(params: ListLinksParams = {}, options?: RequestOptions): Promise<LinkList> {
    const path = `/links${queryOf(params)}`;
    return (await this.send<LinkList>({ method: 'GET', path, kind: 'read' }, options)).body;
  }

  /**
   * Every page of `GET /links` from `params.page` (default 1) to the last, one request each,
   * fetched as the loop asks for them. `perPage` defaults to 200, the most a page holds. Links
   * created while iterating shift the default newest-first pages; `sort: 'oldest'` does not.
   */
  async *iterateLinkPages(
    params: ListLinksParams = {},
    options?: RequestOptions,
  ): AsyncGenerator<LinkList, void, undefined> {
    const perPage = params.perPage ?? 200;
    for (let page = params.page ?? 1; ; page += 1) {
      const list = await this.listLinks({ ...params, page, perPage }, options);
      yield list;
      if (list.links.length === 0 || page >= list.pagination.pageCount) return;
    }
  }

  /** Every link of `GET /links`, page after page: `for await (const link of …)`. */
  async *iterateLinks(
    params: ListLinksParams = {},
    options?: RequestOptions,
  ): AsyncGenerator<Link, void, undefined> {
    for await (const list of this.iterateLinkPages(params, options)) {
      yield* list.links;
    }
  }

  /** `GET /links/{linkId}`: one link; another app's or environment's is `not_found`. */
  async getLink(linkId: string, options?: RequestOptions): Promise<Link> {
    const path = `/links/${encodeURIComponent(linkId)}`;
    return (await this.send<LinkResponse>({ method: 'GET', path, kind: 'read' }, options)).body
      .link;
  }

  /**
   * `GET /links/{linkId}/analytics`: the link's clicks over a range (totals, a series, a
   * breakdown with `groupBy`), filtered by dimension; another app's or environment's link is
   * `not_found`, a bad parameter `invalid_request` naming it.
   */
  async getLinkAnalytics(
    linkId: string,
    params: LinkAnalyticsParams = {},
    options?: RequestOptions,
  ): Promise<Analytics> {
    const path = `/links/${encodeURIComponent(linkId)}/analytics${analyticsQueryOf(params)}`;
    return (await this.send<AnalyticsResponse>({ method: 'GET', path, kind: 'read' }, options)).body
      .analytics;
  }

  /**
   * `GET /links/{linkId}/qr`: the link's QR code, an SVG document (a string, the default) or,
   * with `format: 'png'`, the PNG's bytes. It encodes the link's `url` with `?qr=1`, counted
   * as a scan by the link host. Archived links have one; an expired link is `expired`, another
   * app's or environment's `not_found`, a bad parameter or unreadable colours `invalid_request`.
   */
  async getLinkQr(
    linkId: string,
    params: LinkQrParams & { format: 'png' },
    options?: RequestOptions,
  ): Promise<Uint8Array>;
  async getLinkQr(
    linkId: string,
    params?: LinkQrParams & { format?: 'svg' },
    options?: RequestOptions,
  ): Promise<string>;
  async getLinkQr(
    linkId: string,
    params?: LinkQrParams,
    options?: RequestOptions,
  ): Promise<string | Uint8Array>;
  async getLinkQr(
    linkId: string,
    params: LinkQrParams = {},
    options?: RequestOptions,
  ): Promise<string | Uint8Array> {
    const path = `/links/${encodeURIComponent(linkId)}/qr${analyticsQueryOf(params)}`;
    const image = params.format === 'png' ? 'bytes' : 'text';
    return (
      await this.send<string | Uint8Array>({ method: 'GET', path, kind: 'read', image }, options)
    ).body;
  }

  /**
   * `GET /analytics`: the clicks of every link of the key's app and environment (or of those
   * with `tag`), with its top links.
   */
  async getAnalytics(params: AnalyticsParams = {}, options?: RequestOptions): Promise<Analytics> {
    const path = `/analytics${analyticsQueryOf(params)}`;
    return (await this.send<AnalyticsResponse>({ method: 'GET', path, kind: 'read' }, options)).body
      .analytics;
  }

  /**
   * `PATCH /links/{linkId}`: changes the fields given (null clears one) and answers the whole
   * link. `invalid_request` for a bad field or another alias; `conflict` for an archived link.
   */
  async updateLink(
    linkId: string,
    changes: LinkPatchInput,
    options?: RequestOptions,
  ): Promise<Link> {
    const path = `/links/${encodeURIComponent(linkId)}`;
    const request: ApiRequest = { method: 'PATCH', path, body: changes, kind: 'write' };
    return (await this.send<LinkResponse>(request, options)).body.link;
  }

  /**
   * `DELETE /links/{linkId}`: archives the link (it keeps resolving to its fallback; the alias
   * stays taken; there is no unarchive). `conflict` when it is archived already.
   */
  async archiveLink(linkId: string, options?: RequestOptions): Promise<ArchivedLinkResponse> {
    const path = `/links/${encodeURIComponent(linkId)}`;
    return (
      await this.send<ArchivedLinkResponse>({ method: 'DELETE', path, kind: 'write' }, options)
    ).body;
  }

  /**
   * `POST /webhooks`: saves an endpoint (enabled) and answers it with its signing secret, shown
   * only here. `invalid_request` names each bad field (an http URL in live, a host resolving to
   * a private or loopback address, an unknown event type…); `conflict` past 20 endpoints per
   * app and environment. Never retried: a repeat after a lost answer would make a second one.
   */
  async createWebhook(
    input: WebhookCreateInput,
    options?: RequestOptions,
  ): Promise<WebhookSecretResponse> {
    const request: ApiRequest = {
      method: 'POST',
      path: '/webhooks',
      body: input,
      kind: 'unkeyed_create',
    };
    return (await this.send<WebhookSecretResponse>(request, options)).body;
  }

  /** `GET /webhooks`: every endpoint of the key's app and environment, oldest first. */
  async listWebhooks(options?: RequestOptions): Promise<WebhookList> {
    return (
      await this.send<WebhookList>({ method: 'GET', path: '/webhooks', kind: 'read' }, options)
    ).body;
  }

  /** `GET /webhooks/{webhookId}`: one endpoint; another app's or environment's is `not_found`. */
  async getWebhook(webhookId: string, options?: RequestOptions): Promise<Webhook> {
    const path = webhookPath(webhookId);
    return (await this.send<WebhookResponse>({ method: 'GET', path, kind: 'read' }, options)).body
      .webhook;
  }

  /**
   * `PATCH /webhooks/{webhookId}`: changes the fields given; `enabled: true` re-enables a
   * disabled endpoint and its pending deliveries resume at once.
   */
  async updateWebhook(
    webhookId: string,
    changes: WebhookPatchInput,
    options?: RequestOptions,
  ): Promise<Webhook> {
    const request: ApiRequest = {
      method: 'PATCH',
      path: webhookPath(webhookId),
      body: changes,
      kind: 'write',
    };
    return (await this.send<WebhookResponse>(request, options)).body.webhook;
  }

  /** `DELETE /webhooks/{webhookId}`: deletes the endpoint with its deliveries. */
  async deleteWebhook(webhookId: string, options?: RequestOptions): Promise<void> {
    const request: ApiRequest = { method: 'DELETE', path: webhookPath(webhookId), kind: 'write' };
    await this.send<undefined>(request, options);
  }

  /**
   * `POST /webhooks/{webhookId}/rotate-secret`: a new signing secret, shown only here; the
   * previous one keeps signing beside it for 24 hours.
   */
  async rotateWebhookSecret(
    webhookId: string,
    options?: RequestOptions,
  ): Promise<WebhookSecretResponse> {
    const path = `${webhookPath(webhookId)}/rotate-secret`;
    return (
      await this.send<WebhookSecretResponse>({ method: 'POST', path, kind: 'write' }, options)
    ).body;
  }

  /** `GET /webhooks/{webhookId}/deliveries`: one page, newest first; follow `nextCursor`. */
  async listWebhookDeliveries(
    webhookId: string,
    params: ListWebhookDeliveriesParams = {},
    options?: RequestOptions,
  ): Promise<WebhookDeliveryList> {
    const path = `${webhookPath(webhookId)}/deliveries${analyticsQueryOf(params)}`;
    return (await this.send<WebhookDeliveryList>({ method: 'GET', path, kind: 'read' }, options))
      .body;
  }

  /**
   * `POST /webhooks/{webhookId}/deliveries/{deliveryId}/retry`: one more attempt now, whatever
   * the delivery's status; `conflict` while the endpoint is disabled.
   */
  async retryWebhookDelivery(
    webhookId: string,
    deliveryId: string,
    options?: RequestOptions,
  ): Promise<WebhookDelivery> {
    const path = `${webhookPath(webhookId)}/deliveries/${encodeURIComponent(deliveryId)}/retry`;
    return (
      await this.send<WebhookDeliveryResponse>({ method: 'POST', path, kind: 'write' }, options)
    ).body.delivery;
  }

  /** `POST /links/batch` of `request`, its answer with what the headers said. */
  private async batchCall(
    request: ApiRequest,
    options: RequestOptions,
  ): Promise<CreateLinksResult> {
    const answer = await this.send<BatchReport>(request, options);
    return {
      ...answer.body,
      status: answer.status === 201 ? 201 : 207,
      retryAfter: answer.retryAfter,
      requestId: answer.requestId,
      rateLimit: answer.rateLimit,
      replayed: answer.replayed,
      attempts: answer.attempts,
    };
  }

  /**
   * A create under the caller's key, else a fresh one, else none (then never retried). `null`:
   * none whatever the generator (a run that could make no run key sends every chunk without).
   */
  private createRequest(
    path: string,
    body: unknown,
    idempotencyKey: string | undefined | null,
  ): ApiRequest {
    const key = idempotencyKey === null ? undefined : (idempotencyKey ?? this.generateKey?.());
    return key === undefined
      ? { method: 'POST', path, body, kind: 'unkeyed_create' }
      : {
          method: 'POST',
          path,
          body,
          kind: 'keyed_create',
          idempotencyKey: checkIdempotencyKey(key),
        };
  }

  /** One logical call: attempts, and waits between them, until an answer or a final error. */
  private async send<T>(
    request: ApiRequest,
    options: RequestOptions = {},
  ): Promise<Answer<T> & { attempts: number }> {
    const maxRetries = wholeOrZero(options.maxRetries, this.retry.maxRetries, 'maxRetries');
    const timeoutMs = positive(options.timeoutMs, this.timeoutMs, 'timeoutMs');
    for (let attempt = 1; ; attempt += 1) {
      const outcome = await this.attempt<T>(request, attempt, timeoutMs, options.signal);
      if (!isLinkServiceError(outcome)) return { ...outcome, attempts: attempt };
      const retry = attempt - 1;
      if (retry >= maxRetries || !isRetryable(outcome, request.kind)) throw outcome;
      const delay = retryDelayMs(retry, outcome.retryAfter, this.retry);
      if (delay === undefined) throw outcome;
      await sleep(delay, options.signal);
    }
  }

  /** One HTTP exchange, bounded by `timeoutMs`; its failure as a value, for `send` to judge. */
  private async attempt<T>(
    request: ApiRequest,
    attempt: number,
    timeoutMs: number,
    signal: AbortSignalLike | undefined,
  ): Promise<Answer<T> | LinkServiceError> {
    throwIfAborted(signal);
    const authorization = AUTHORIZATION.get(this);
    // Only an object the constructor did not build (Object.create of the prototype) has none.
    if (authorization === undefined) throw new TypeError('not a constructed LinkServiceClient');
    const headers: Record<string, string> = { accept: 'application/json', authorization };
    if (this.userAgent !== undefined) headers['user-agent'] = this.userAgent;
    if (request.body !== undefined) headers['content-type'] = 'application/json';
    if (request.idempotencyKey !== undefined) {
      headers['idempotency-key'] = request.idempotencyKey;
    }

    const aborter = new AbortController();
    const timer = setTimeout(() => {
      aborter.abort();
    }, timeoutMs);
    const onAbort = () => {
      aborter.abort();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const response = await this.fetch(`${this.apiUrl}${request.path}`, {
        method: request.method,
        headers,
        ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
        signal: aborter.signal,
      });
      // Inside the timeout: a gateway that sends headers and then stalls is a timeout too.
      if (request.image && response.status >= 200 && response.status < 300) {
        return await readImage<T>(response, request.image);
      }
      const text = await response.text();
      return readAnswer<T>(response.status, text, response.headers, attempt);
    } catch (cause) {
      if (cause instanceof FetchWithoutBytes) throw cause;
      throwIfAborted(signal);
      // The caller's abort was thrown above: this one is the timer's.
      const timedOut = aborter.signal.aborted;
      return new LinkServiceErrorCtor({
        slug: timedOut ? 'timeout' : 'network',
        status: 0,
        message: timedOut
          ? `no answer from the gateway within ${timeoutMs} ms`
          : 'the gateway could not be reached',
        attempts: attempt,
        cause,
      });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }
}

/** The caller's `fetch` cannot read a png: a mistake of the setup, not of the network. */
class FetchWithoutBytes extends TypeError {
  constructor() {
    super("options.fetch's answers have no arrayBuffer(): a png cannot be read");
  }
}

/** A 2xx image answer: its text (svg) or its bytes (png). */
async function readImage<T>(
  response: Awaited<ReturnType<FetchLike>>,
  read: 'text' | 'bytes',
): Promise<Answer<T>> {
  const info = answerInfoOf(response.headers);
  if (read === 'text') {
    return { status: response.status, body: (await response.text()) as T, ...info };
  }
  if (!response.arrayBuffer) throw new FetchWithoutBytes();
  const bytes = new Uint8Array(await response.arrayBuffer());
  return { status: response.status, body: bytes as T, ...info };
}

/** The client of one gateway and key: `new LinkServiceClient(options)`. */
export function createClient(options: LinkServiceClientOptions): LinkServiceClient {
  return new LinkServiceClient(options);
}

/** `?search=…&page=…` of the parameters given, in a stable order; empty when none. */
export function queryOf(params: ListLinksParams): string {
  const query = new URLSearchParams();
  const { search, tag, status, sort, page, perPage } = params;
  const given: [string, string | number | undefined][] = [
    ['search', search],
    ['tag', tag],
    ['status', status],
    ['sort', sort],
    ['page', page],
    ['perPage', perPage],
  ];
  for (const [name, value] of given) {
    if (value !== undefined) query.set(name, String(value));
  }
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}

function webhookPath(webhookId: string): string {
  return `/webhooks/${encodeURIComponent(webhookId)}`;
}

/** The analytics (or other) parameters given, in their declared order; empty when none. */
export function analyticsQueryOf(
  params: AnalyticsParams | ListWebhookDeliveriesParams | LinkQrParams,
): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined) query.set(name, String(value));
  }
  const text = query.toString();
  return text === '' ? '' : `?${text}`;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) throw new RangeError(`${name} must be above 0`);
  return value;
}

function wholeOrZero(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0) {
    throw new RangeError(`${name} must be a whole number, 0 or more`);
  }
  return value;
}

/** The caller's cancellation, as the platform reports it: the signal's reason. */
function abortReason(signal: AbortSignalLike): Error {
  const { reason } = signal;
  if (reason instanceof Error) return reason;
  return Object.assign(new Error('The operation was aborted.'), {
    name: 'AbortError',
    cause: reason,
  });
}

function throwIfAborted(signal: AbortSignalLike | undefined): void {
  if (signal?.aborted) throw abortReason(signal);
}

/** Waits `ms`, or rejects as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignalLike | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      if (signal) reject(abortReason(signal));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
