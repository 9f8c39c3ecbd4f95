import { request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  /** The parsed body when it is JSON. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- tests read fields freely
  body: any;
}

/**
 * node:http instead of fetch, for what fetch refuses to send: a body on GET/HEAD/OPTIONS, or a
 * body split into chunks the test controls (`chunks`, sent with Transfer-Encoding: chunked).
 */
export function rawRequest(
  baseUrl: string,
  {
    method,
    path,
    headers = {},
    body,
    chunks,
  }: {
    method: string;
    path: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    chunks?: Iterable<Buffer>;
  },
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    // node:http sends GET/DELETE/OPTIONS bodies without framing unless given a length.
    const framed =
      body !== undefined && !chunks
        ? { 'content-length': String(Buffer.byteLength(body)), ...headers }
        : chunks
          ? { 'transfer-encoding': 'chunked', ...headers }
          : headers;
    const req = request(`${baseUrl}${path}`, { method, headers: framed }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (part: Buffer) => parts.push(part));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(parts).toString('utf8');
        const isJson = res.headers['content-type']?.includes('application/json') ?? false;
        resolve({
          status: res.statusCode ?? 0,
          headers: res.headers,
          text,
          body: isJson && text ? JSON.parse(text) : undefined,
        });
      });
    });
    // The server may answer (401, 413...) and stop reading before the body is all sent.
    req.on('error', reject);
    if (chunks) {
      for (const chunk of chunks) req.write(chunk);
    } else if (body !== undefined) {
      req.write(body);
    }
    req.end();
  });
}
