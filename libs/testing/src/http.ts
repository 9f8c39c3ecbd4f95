import { request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';

export interface HttpRequest {
  method?: string;
  /** Sent as `Authorization: Bearer <key>`. */
  key?: string;
  /** JSON-serialised, with `Content-Type: application/json`. */
  body?: unknown;
  /**
   * Sent as is, framed by Content-Length, whatever the method (fetch refuses a body on GET);
   * no Content-Type is added.
   */
  rawBody?: string | Buffer;
  /** Sent with `Transfer-Encoding: chunked`, one write per chunk, instead of a body. */
  chunks?: Iterable<Buffer>;
  /** Win over the ones derived from `key` and `body`. */
  headers?: Record<string, string>;
  /** Overrides Host: the link host resolves links by it, and fetch cannot set it. */
  host?: string;
  timeoutMs?: number;
}

export interface HttpResponse<Body = unknown> {
  status: number;
  headers: Headers;
  text: string;
  /** The body's bytes, for answers that are not text (a png). */
  bytes: Buffer;
  /**
   * The body parsed as JSON, typed as the caller's contract says it is (e.g. the gateway's
   * ApiBody); undefined when the response was not JSON.
   */
  body: Body | undefined;
}

/**
 * The one HTTP client of the tests: node:http without keep-alive, so a stopped service leaves no
 * pooled socket behind, and so a test can send what fetch refuses (a body on GET, chunks, Host).
 */
export function sendRequest<Body = unknown>(
  url: string,
  { method, key, body, rawBody, chunks, headers = {}, host, timeoutMs = 15_000 }: HttpRequest = {},
): Promise<HttpResponse<Body>> {
  const payload = body !== undefined ? JSON.stringify(body) : rawBody;
  const sent: Record<string, string> = {
    ...(key !== undefined && { authorization: `Bearer ${key}` }),
    ...(body !== undefined && { 'content-type': 'application/json' }),
    ...(chunks
      ? { 'transfer-encoding': 'chunked' }
      : payload !== undefined && { 'content-length': String(Buffer.byteLength(payload)) }),
    ...(host !== undefined && { host }),
    ...headers,
  };
  const target = new URL(url);
  const verb = methodOf({ method, body, rawBody, chunks });

  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        hostname: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: verb,
        headers: sent,
        agent: false,
        timeout: timeoutMs,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (part: Buffer) => parts.push(part));
        res.on('error', reject);
        res.on('end', () => {
          const bytes = Buffer.concat(parts);
          const text = bytes.toString('utf8');
          const isJson = res.headers['content-type']?.includes('application/json') ?? false;
          resolve({
            status: res.statusCode ?? 0,
            headers: toHeaders(res.headers),
            text,
            bytes,
            body: isJson && text ? (JSON.parse(text) as Body) : undefined,
          });
        });
      },
    );
    outgoing.on('timeout', () => {
      outgoing.destroy(new Error(`${verb} ${url} timed out`));
    });
    // The server may answer (401, 413...) and stop reading before the body is all sent.
    outgoing.on('error', reject);
    if (chunks) {
      for (const chunk of chunks) outgoing.write(chunk);
    } else if (payload !== undefined) {
      outgoing.write(payload);
    }
    outgoing.end();
  });
}

/** The method sendRequest uses: the request's own, else GET without a body and POST with one. */
export function methodOf({ method, body, rawBody, chunks }: HttpRequest = {}): string {
  return method ?? (body === undefined && rawBody === undefined && !chunks ? 'GET' : 'POST');
}

/** Case-insensitive reads (`headers.get('RateLimit-Limit')`), as fetch gives them. */
function toHeaders(incoming: IncomingHttpHeaders): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(incoming)) {
    if (value === undefined) continue;
    for (const one of Array.isArray(value) ? value : [value]) headers.append(name, one);
  }
  return headers;
}

/** Runs `request` and says how long it took to answer: for the tests of answer-time bounds. */
export async function timed<T>(request: () => Promise<T>): Promise<{ res: T; elapsedMs: number }> {
  const started = Date.now();
  const res = await request();
  return { res, elapsedMs: Date.now() - started };
}
