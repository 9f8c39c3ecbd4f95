import {
  CLICK_TOKEN_PARAMETER,
  clickTokenFromReferrer,
  isClickTokenUrl,
  isOnLinkHost,
} from './click-tokens';
import type { Erasure, InstallEvidence, InstallReport, Resolution } from './contract';
import type { ErrorSlug } from './errors';
import { LinkServiceError } from './errors';

/** What the client needs of `fetch`; the global one of browsers, React Native and Node 18+ fits. */
export type FetchLike = (
  url: string,
  init: { method: string; headers: Record<string, string>; body?: string; signal: AbortSignal },
) => Promise<{
  status: number;
  headers: { get(name: string): string | null };
  text(): Promise<string>;
}>;

export interface LinkServiceClientOptions {
  /**
   * The gateway's URL as your app reaches it, e.g. `https://api.acme.example` (a path prefix
   * your proxy adds is kept: `https://acme.example/links`), without `/api/v1`: the client adds
   * `/api/v1/sdk/…` itself, and `jwksUrl` is `<baseUrl>/.well-known/jwks.json`.
   */
  baseUrl: string;
  /** `ls_pk_live_…` or `ls_pk_test_…`: one app, one environment. Never a secret key. */
  publishableKey: string;
  /** Defaults to the global `fetch`; pass one for tests or a custom network stack. */
  fetch?: FetchLike;
  /** How long one call waits for the gateway's answer; 10 000 ms by default. */
  timeoutMs?: number;
  /**
   * Your app's link hosts, the ones its builds with this key open: `['acme.links.example.com']`
   * (live), `['acme-test.links.example.com']` (test), or both. Required and non-empty:
   * `reportInstall` sends a clipboard or opened URL only when its host is one of them (compared
   * case-insensitively, any port), so a universal link that carries a secret (a password reset)
   * or whatever else the clipboard holds never leaves the device.
   */
  linkHosts: readonly string[];
}

const DEFAULT_TIMEOUT_MS = 10_000;

/** A host name as link hosts are: dot-separated labels, no scheme, port, path or space. */
const HOST_NAME = /^[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)+$/i;

/** `linkHosts` checked and lower-cased, or a TypeError naming what is wrong. */
function checkLinkHosts(linkHosts: unknown): string[] {
  if (!Array.isArray(linkHosts) || linkHosts.length === 0) {
    throw new TypeError(
      "linkHosts is required: your app's link hosts, e.g. ['acme.links.example.com']",
    );
  }
  return linkHosts.map((host: unknown) => {
    if (typeof host !== 'string' || host.length > 253 || !HOST_NAME.test(host)) {
      throw new TypeError(
        `linkHosts holds host names only (e.g. 'acme.links.example.com', no scheme, port or path): ${String(host)}`,
      );
    }
    return host.toLowerCase();
  });
}

/**
 * The evidence of `evidence` that can name a link, the rest dropped before it leaves the device:
 * of a Play referrer only its `ls_click=<token>` pair (the gateway needs no more, and the rest of
 * a referrer may hold a gclid or other campaign data about the person), a clipboard text only when
 * it is a URL with a token on one of `linkHosts`, an opened URL only when it is on one of
 * `linkHosts`. What `reportInstall` sends.
 */
export function evidenceToSend(
  evidence: InstallEvidence,
  linkHosts: readonly string[],
): InstallEvidence {
  const sent: InstallEvidence = { platform: evidence.platform };
  const { playReferrer, clipboardUrl, openedUrl } = evidence;
  const referrerToken = clickTokenFromReferrer(playReferrer);
  if (referrerToken !== null) {
    sent.playReferrer = `${CLICK_TOKEN_PARAMETER}=${referrerToken}`;
  }
  if (clipboardUrl && isClickTokenUrl(clipboardUrl, linkHosts)) {
    sent.clipboardUrl = clipboardUrl.trim();
  }
  if (openedUrl && isOnLinkHost(openedUrl, linkHosts)) {
    sent.openedUrl = openedUrl.trim();
  }
  return sent;
}

/**
 * The app's side of linkservice's app interface (app-interface.md), with a publishable key.
 * Every method resolves with the gateway's answer or rejects with a `LinkServiceError`.
 */
export class LinkServiceClient {
  /** Where the gateway publishes the public keys that verify erasure receipts. */
  readonly jwksUrl: string;
  private readonly apiUrl: string;
  private readonly fetch: FetchLike;
  private readonly timeoutMs: number;
  private readonly linkHosts: readonly string[];

  constructor(private readonly options: LinkServiceClientOptions) {
    const base = options.baseUrl.replace(/\/+$/, '');
    if (!/^https?:\/\/[^/?#\s]+(\/[^?#\s]*)?$/i.test(base)) {
      throw new TypeError(`baseUrl must be an http(s) URL without query: ${options.baseUrl}`);
    }
    if (/\/api\/v1(\/sdk)?$/.test(base)) {
      throw new TypeError(`baseUrl is the gateway's URL without /api/v1: ${options.baseUrl}`);
    }
    if (!/^ls_pk_(live|test)_/.test(options.publishableKey)) {
      // A secret key must never ship in an app; the gateway would refuse it anyway (401).
      throw new TypeError('publishableKey must be a publishable key (ls_pk_live_… / ls_pk_test_…)');
    }
    this.linkHosts = checkLinkHosts(options.linkHosts);
    const given = options.fetch;
    if (!given && typeof (globalThis as { fetch?: unknown }).fetch !== 'function') {
      throw new TypeError('no global fetch here: pass options.fetch');
    }
    // Always called as a plain function: browsers refuse a fetch called as another object's method.
    this.fetch = given ? (url, init) => given(url, init) : (url, init) => fetch(url, init);
    this.apiUrl = `${base}/api/v1/sdk`;
    this.jwksUrl = `${base}/.well-known/jwks.json`;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * The link a URL names (the URL that opened the app, any query or fragment) and its
   * `deepLinkData`. Rejects with `not_found` for anything that is not a link of this key's app
   * and environment, `expired` (410) for an expired link. Counts nothing.
   */
  resolve(url: string): Promise<Resolution> {
    return this.send<Resolution>('POST', '/resolve', { body: { url } });
  }

  /**
   * Reports this installation once, on its first launch, with what it found (`evidenceToSend`
   * keeps only what can name a link). Matched or not, the answer holds the install's id and
   * secret: store both to let the user erase this installation's data later.
   *
   * A `timeout` or `network` failure (or a proxy's `unexpected_response`) may come after the
   * gateway matched and only its answer was lost: the click token is then used up and a retry
   * answers `match.type: 'none'`. No device data is sent, so nothing can tie the retry to the
   * first report: retry only within a short window, then accept `none`. An error the gateway
   * answers itself used nothing up.
   */
  reportInstall(evidence: InstallEvidence): Promise<InstallReport> {
    return this.send<InstallReport>('POST', '/installs', {
      body: evidenceToSend(evidence, this.linkHosts),
    });
  }

  /**
   * Erases what the service holds about this installation and answers a signed receipt. Every
   * failure (unknown id, wrong secret, already erased) is the same `not_found`.
   */
  eraseInstall(installId: string, secret: string): Promise<Erasure> {
    return this.send<Erasure>('DELETE', `/installs/${encodeURIComponent(installId)}`, {
      headers: { 'x-install-secret': secret },
    });
  }

  private async send<T>(
    method: 'POST' | 'DELETE',
    path: string,
    request: { body?: object; headers?: Record<string, string> },
  ): Promise<T> {
    const headers: Record<string, string> = {
      accept: 'application/json',
      authorization: `Bearer ${this.options.publishableKey}`,
      ...request.headers,
    };
    if (request.body !== undefined) headers['content-type'] = 'application/json';

    const aborter = new AbortController();
    const timer = setTimeout(() => {
      aborter.abort();
    }, this.timeoutMs);
    let status: number;
    let text: string;
    let responseHeaders: { get(name: string): string | null };
    try {
      const response = await this.fetch(`${this.apiUrl}${path}`, {
        method,
        headers,
        ...(request.body !== undefined && { body: JSON.stringify(request.body) }),
        signal: aborter.signal,
      });
      status = response.status;
      responseHeaders = response.headers;
      text = await response.text();
    } catch (cause) {
      const timedOut = aborter.signal.aborted;
      throw new LinkServiceError({
        status: 0,
        error: timedOut ? 'timeout' : 'network',
        message: timedOut
          ? `no answer from the gateway within ${this.timeoutMs} ms`
          : 'the gateway could not be reached',
        cause,
      });
    } finally {
      clearTimeout(timer);
    }
    return answerOf(status, text, responseHeaders) as T;
  }
}

/** The client of one gateway, app and environment: `new LinkServiceClient(options)`. */
export function createClient(options: LinkServiceClientOptions): LinkServiceClient {
  return new LinkServiceClient(options);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Seconds of a `Retry-After` (delta seconds or an HTTP date), or undefined. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  // HTTP dates start with the day's name; Date.parse alone would take '-3' for a year.
  if (!/^[A-Za-z]{3}/.test(trimmed)) return undefined;
  const date = Date.parse(trimmed);
  return Number.isNaN(date) ? undefined : Math.max(0, Math.ceil((date - now) / 1000));
}

/** The gateway's answer as a value (2xx) or a `LinkServiceError` (anything else). */
function answerOf(
  status: number,
  text: string,
  headers: { get(name: string): string | null },
): Record<string, unknown> {
  const body = parseJson(text);
  const requestId = headers.get('x-request-id') ?? undefined;
  if (status >= 200 && status < 300 && isObject(body)) return body;
  if (
    status >= 400 &&
    isObject(body) &&
    typeof body.error === 'string' &&
    typeof body.message === 'string'
  ) {
    return throwError({
      status,
      error: body.error as ErrorSlug,
      message: body.message,
      fields: isObject(body.fields) ? (body.fields as Record<string, string>) : undefined,
      retryAfter: retryAfterSeconds(headers.get('retry-after')),
      requestId,
    });
  }
  return throwError({
    status,
    error: 'unexpected_response',
    message: `unexpected answer from the gateway (HTTP ${status})`,
    retryAfter: retryAfterSeconds(headers.get('retry-after')),
    requestId,
  });
}

function throwError(init: ConstructorParameters<typeof LinkServiceError>[0]): never {
  throw new LinkServiceError(init);
}
