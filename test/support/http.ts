import { request as httpRequest } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';

export interface HttpRequest {
  method?: string;
  /** Absolute http:// URL (the stack only ever listens on 127.0.0.1). */
  url: string;
  headers?: Record<string, string>;
  /** Sent as JSON with `Content-Type: application/json` unless it is already a string. */
  body?: unknown;
  /** Overrides the Host header: the redirect service resolves links by host, and fetch cannot set it. */
  host?: string;
  timeoutMs?: number;
}

export interface HttpResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The body parsed as JSON, or undefined when it is not JSON. */
  json: unknown;
}

/** One HTTP request with node:http (no keep-alive, so a stopped stack leaves no sockets behind). */
export function sendRequest(req: HttpRequest): Promise<HttpResponse> {
  const url = new URL(req.url);
  const headers: Record<string, string> = { ...req.headers };
  let payload: string | undefined;
  if (req.body !== undefined) {
    payload = typeof req.body === 'string' ? req.body : JSON.stringify(req.body);
    if (!Object.keys(headers).some((name) => name.toLowerCase() === 'content-type')) {
      headers['content-type'] = 'application/json';
    }
    headers['content-length'] = String(Buffer.byteLength(payload));
  }
  if (req.host !== undefined) headers.host = req.host;

  return new Promise((resolve, reject) => {
    const outgoing = httpRequest(
      {
        hostname: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: req.method ?? 'GET',
        headers,
        agent: false,
        timeout: req.timeoutMs ?? 15_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            text,
            json: parseJson(text),
          });
        });
      },
    );
    outgoing.on('timeout', () => {
      outgoing.destroy(new Error(`${req.method ?? 'GET'} ${req.url} timed out`));
    });
    outgoing.on('error', reject);
    outgoing.end(payload);
  });
}

function parseJson(text: string): unknown {
  if (text === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
