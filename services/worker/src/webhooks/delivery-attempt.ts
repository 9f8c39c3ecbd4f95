import type { LookupAddress, LookupOptions } from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { untraced } from '@linkservice/telemetry';
import type { AddressPolicy, ResolveHost } from '@linkservice/webhooks';
import { checkDestination, resolveWithSystem } from '@linkservice/webhooks';
import type { AttemptOutcome } from './delivery-outcome';
import { outcomeOfStatus } from './delivery-outcome';

/** Of a receiver's answer only this many bytes are read and kept (webhook_attempts). */
export const RESPONSE_EXCERPT_BYTES = 256;

/**
 * Connections kept open between attempts to the same host (a busy endpoint gets a stream of
 * events): a new TCP and TLS handshake per event cost more CPU than the rest of the attempt.
 * Safe with the address pinning: a connection is only ever opened to an address checked for
 * the attempt that opened it, and every attempt checks its host's addresses again before it
 * sends (a host now resolving to a refused address sends nothing, on any connection).
 */
const KEEP_ALIVE = { keepAlive: true, maxFreeSockets: 16, timeout: 30_000 } as const;
const AGENTS = { http: new http.Agent(KEEP_ALIVE), https: new https.Agent(KEEP_ALIVE) };

export interface AttemptRequest {
  url: URL;
  headers: Record<string, string>;
  body: string;
  /** The whole attempt: resolving, connecting, sending and reading the answer. */
  timeoutMs: number;
  policy: AddressPolicy;
  resolve?: ResolveHost;
  /** Aborted: the process is going away without finishing (the attempt records nothing). */
  signal?: AbortSignal;
}

export interface AttemptResult {
  outcome: AttemptOutcome;
  status: number | null;
  excerpt: string | null;
}

/**
 * A `lookup` that answers only the addresses checkDestination approved: the connection can go
 * nowhere else, whatever the host's DNS answers by now (DNS rebinding). TLS still verifies the
 * URL's host name, as the request's host stays the name.
 */
export function pinnedLookup(addresses: readonly LookupAddress[]): LookupFunction {
  return (hostname, options: LookupOptions, callback) => {
    const family =
      options.family === 'IPv4' ? 4 : options.family === 'IPv6' ? 6 : (options.family ?? 0);
    const usable = addresses.filter((address) => family === 0 || address.family === family);
    if (usable.length === 0) {
      const error: NodeJS.ErrnoException = new Error(`no checked address for ${hostname}`);
      error.code = 'ENOTFOUND';
      callback(error, '', 0);
    } else if (options.all) {
      callback(null, usable);
    } else {
      callback(null, usable[0].address, usable[0].family);
    }
  };
}

/** What a receiver's answer body begins with, as text Postgres can hold. */
function excerptOf(chunks: readonly Buffer[]): string | null {
  const bytes = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES);
  // A NUL cannot be stored in a text column; a multi-byte character cut at the end is replaced.
  return bytes.length === 0 ? null : bytes.toString('utf8').split('\u0000').join('');
}

/**
 * One delivery attempt: resolves the URL's host now and checks every address (a refused or
 * unresolvable one sends nothing), then POSTs to the checked addresses only. Never follows a
 * redirect (a 3xx is an `http_error`); reads at most RESPONSE_EXCERPT_BYTES of the answer,
 * then drops the connection; the whole attempt is bounded by `timeoutMs` (an answer whose
 * status came in time counts, even if its body did not end). Never throws.
 */
export async function attemptDelivery(request: AttemptRequest): Promise<AttemptResult> {
  const { url, timeoutMs, signal } = request;
  const failed = (outcome: AttemptOutcome): AttemptResult => ({
    outcome,
    status: null,
    excerpt: null,
  });
  const deadline = Date.now() + timeoutMs;
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => {
      resolve('timeout');
    }, timeoutMs);
  });
  try {
    const check = await Promise.race([
      checkDestination(url, request.policy, request.resolve ?? resolveWithSystem),
      timedOut,
    ]);
    if (check === 'timeout') return failed('timeout');
    if (!check.ok) return failed(check.reason);
    if (signal?.aborted) return failed('network_error');
    return await send(request, check.addresses, deadline - Date.now());
  } finally {
    clearTimeout(timer);
  }
}

function send(
  request: AttemptRequest,
  addresses: readonly LookupAddress[],
  remainingMs: number,
): Promise<AttemptResult> {
  const { url, body, signal } = request;
  return new Promise((resolve) => {
    let status: number | null = null;
    const chunks: Buffer[] = [];
    let settled = false;
    // Outside any trace: the HTTP client's span would record the URL, query and all.
    const outgoing = untraced(() =>
      (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        headers: { ...request.headers, 'content-length': String(Buffer.byteLength(body)) },
        // A new connection goes to the checked addresses only (see KEEP_ALIVE).
        agent: url.protocol === 'https:' ? AGENTS.https : AGENTS.http,
        lookup: pinnedLookup(addresses),
      }),
    );
    // Whether the answer was read to its end: then its connection may serve the next attempt.
    let complete = false;
    const settle = (result: AttemptResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (!complete) outgoing.destroy();
      resolve(result);
    };
    const answered = (): void => {
      if (status === null) return;
      settle({ outcome: outcomeOfStatus(status), status, excerpt: excerptOf(chunks) });
    };
    const timer = setTimeout(
      () => {
        if (status !== null) answered();
        else settle({ outcome: 'timeout', status: null, excerpt: null });
      },
      Math.max(0, remainingMs),
    );
    const onAbort = (): void => {
      settle({ outcome: 'network_error', status: null, excerpt: null });
    };
    signal?.addEventListener('abort', onAbort);

    outgoing.on('response', (response) => {
      status = response.statusCode ?? 0;
      let read = 0;
      response.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        read += chunk.length;
        // Enough for the excerpt: stop reading (settle drops the connection).
        if (read >= RESPONSE_EXCERPT_BYTES) answered();
      });
      response.on('end', () => {
        complete = true;
        answered();
      });
      response.on('error', answered);
      response.on('aborted', answered);
    });
    outgoing.on('error', () => {
      if (status !== null) answered();
      else settle({ outcome: 'network_error', status: null, excerpt: null });
    });
    outgoing.end(body);
  });
}
