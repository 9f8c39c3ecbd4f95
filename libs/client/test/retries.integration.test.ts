import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LinkServiceClientOptions } from '../src';
import { createClient, isLinkServiceError } from '../src';
import { linkNamed } from './fixtures';

/**
 * The client's retries over real HTTP, with Node's own fetch: a local node:http server plays a
 * gateway that answers from a script (503 or 429 with Retry-After, a stall, a dropped socket)
 * and records every request, so the test sees what arrives on the wire: how many attempts, how
 * far apart, and under which Idempotency-Key.
 */

const KEY = 'ls_sk_live_0123456789abcdefghijABCDEFGHIJxy';

interface Arrival {
  method: string;
  url: string;
  idempotencyKey: string | undefined;
  authorization: string | undefined;
  body: string;
  at: number;
}

/** What the scripted gateway does with one request. */
type Step =
  | { status: number; body: unknown; headers?: Record<string, string> }
  | { drop: true }
  | { stallMs: number };

const LINK = linkNamed('spring');

const CREATED: Step = { status: 201, body: { link: LINK } };
const UNAVAILABLE: Step = {
  status: 503,
  body: { error: 'unavailable', message: 'Link creation is temporarily unavailable.' },
  headers: { 'Retry-After': '1' },
};
const RATE_LIMITED: Step = {
  status: 429,
  body: { error: 'rate_limited', message: 'This app has used its link creations.' },
  headers: { 'Retry-After': '1', 'RateLimit-Limit': '300', 'RateLimit-Remaining': '0' },
};

let server: Server;
let baseUrl: string;
let script: Step[] = [];
let arrivals: Arrival[] = [];

function handle(req: IncomingMessage, res: ServerResponse): void {
  const parts: Buffer[] = [];
  req.on('data', (part: Buffer) => parts.push(part));
  req.on('end', () => {
    arrivals.push({
      method: req.method ?? '',
      url: req.url ?? '',
      idempotencyKey: req.headers['idempotency-key'] as string | undefined,
      authorization: req.headers.authorization,
      body: Buffer.concat(parts).toString('utf8'),
      at: Date.now(),
    });
    // The script's last step answers every further request.
    const step = script.length > 1 ? script.shift()! : script[0];
    if ('drop' in step) {
      req.socket.destroy();
      return;
    }
    if ('stallMs' in step) {
      setTimeout(() => res.destroy(), step.stallMs).unref();
      return;
    }
    res.writeHead(step.status, {
      'content-type': 'application/json',
      'x-request-id': `req-${arrivals.length}`,
      ...step.headers,
    });
    res.end(JSON.stringify(step.body));
  });
}

function client(options: Partial<LinkServiceClientOptions> = {}) {
  // No `fetch` option: Node's global fetch, as customers' servers use it.
  return createClient({ baseUrl, apiKey: KEY, timeoutMs: 2_000, ...options });
}

beforeAll(async () => {
  server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

beforeEach(() => {
  script = [];
  arrivals = [];
});

afterAll(async () => {
  // fetch keeps connections alive: close them, or the server would wait for their idle timeout.
  server.closeAllConnections();
  await new Promise<void>((resolve) =>
    server.close(() => {
      resolve();
    }),
  );
});

it('retries a create after 503 and 429, honouring Retry-After, under one Idempotency-Key', async () => {
  script = [UNAVAILABLE, RATE_LIMITED, CREATED];
  const started = Date.now();
  const created = await client().createLink({
    alias: 'spring',
    webFallbackUrl: LINK.webFallbackUrl,
  });
  expect(created.link).toEqual(LINK);
  expect(created).toMatchObject({ attempts: 3, replayed: false, requestId: 'req-3' });

  expect(arrivals).toHaveLength(3);
  const [first, second, third] = arrivals;
  expect(first.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
  expect(arrivals.map((arrival) => arrival.idempotencyKey)).toEqual([
    first.idempotencyKey,
    first.idempotencyKey,
    first.idempotencyKey,
  ]);
  // The same request each time, with the key's secret only in Authorization.
  for (const arrival of arrivals) {
    expect(arrival).toMatchObject({ method: 'POST', url: '/api/v1/links', body: first.body });
    expect(arrival.authorization).toBe(`Bearer ${KEY}`);
  }
  // Retry-After: 1 is a floor for each wait (10 % jitter at most on top).
  expect(second.at - first.at).toBeGreaterThanOrEqual(990);
  expect(third.at - second.at).toBeGreaterThanOrEqual(990);
  expect(Date.now() - started).toBeLessThan(5_000);

  // The next create is another logical create: another key.
  script = [CREATED];
  await client().createLink({ webFallbackUrl: LINK.webFallbackUrl });
  expect(arrivals[3].idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
  expect(arrivals[3].idempotencyKey).not.toBe(first.idempotencyKey);
});

it('reports a replayed answer, and waits out a 409 of a key still in progress', async () => {
  script = [
    {
      status: 409,
      body: {
        error: 'conflict',
        message: 'A request with this Idempotency-Key is still in progress; retry later.',
      },
      headers: { 'Retry-After': '1' },
    },
    { ...CREATED, headers: { 'Idempotent-Replayed': 'true' } },
  ];
  const created = await client().createLink(
    { webFallbackUrl: LINK.webFallbackUrl },
    { idempotencyKey: 'order-4711' },
  );
  expect(created).toMatchObject({ replayed: true, attempts: 2 });
  expect(arrivals.map((arrival) => arrival.idempotencyKey)).toEqual(['order-4711', 'order-4711']);
});

it('never retries a create without an Idempotency-Key', async () => {
  script = [UNAVAILABLE, CREATED];
  const error = await client({ generateIdempotencyKey: null })
    .createLink({ webFallbackUrl: LINK.webFallbackUrl })
    .catch((caught: unknown) => caught);
  expect(isLinkServiceError(error, 'unavailable')).toBe(true);
  expect(error).toMatchObject({ status: 503, retryAfter: 1, attempts: 1, requestId: 'req-1' });
  expect(arrivals).toHaveLength(1);
  expect(arrivals[0].idempotencyKey).toBeUndefined();

  // Nor after a lost answer (the link may exist).
  script = [{ drop: true }, CREATED];
  const lost = await client({ generateIdempotencyKey: null })
    .createLinks([{ webFallbackUrl: LINK.webFallbackUrl }])
    .catch((caught: unknown) => caught);
  expect(lost).toMatchObject({ slug: 'network', status: 0, attempts: 1 });
  expect(arrivals).toHaveLength(2);
});

it('retries a keyed create after a timeout and a dropped connection, with the same key', async () => {
  script = [{ stallMs: 5_000 }, { drop: true }, CREATED];
  const created = await client({ timeoutMs: 300, retry: { baseDelayMs: 10 } }).createLink({
    webFallbackUrl: LINK.webFallbackUrl,
  });
  expect(created.attempts).toBe(3);
  expect(new Set(arrivals.map((arrival) => arrival.idempotencyKey)).size).toBe(1);
  expect(arrivals).toHaveLength(3);
});

it('gives up at once when Retry-After is past maxDelayMs, and after maxRetries', async () => {
  script = [{ ...RATE_LIMITED, headers: { 'Retry-After': '1800' } }, CREATED];
  const limited = await client()
    .createLink({ webFallbackUrl: LINK.webFallbackUrl })
    .catch((caught: unknown) => caught);
  expect(limited).toMatchObject({ slug: 'rate_limited', retryAfter: 1800, attempts: 1 });
  expect(arrivals).toHaveLength(1);

  arrivals = [];
  script = [{ ...UNAVAILABLE, headers: {} }];
  const unavailable = await client({ retry: { maxRetries: 3, baseDelayMs: 10 } })
    .getApp()
    .catch((caught: unknown) => caught);
  expect(unavailable).toMatchObject({ slug: 'unavailable', attempts: 4 });
  expect(arrivals.map((arrival) => arrival.url)).toEqual(Array(4).fill('/api/v1/app'));
});

it('retries a read after a lost answer, but not an archive', async () => {
  script = [{ drop: true }, { status: 200, body: { link: LINK } }];
  expect(await client({ retry: { baseDelayMs: 10 } }).getLink('lnk_1')).toEqual(LINK);
  expect(arrivals).toHaveLength(2);

  arrivals = [];
  script = [{ drop: true }, { status: 200, body: { link: LINK, note: 'archived' } }];
  const error = await client({ retry: { baseDelayMs: 10 } })
    .archiveLink('lnk_1')
    .catch((caught: unknown) => caught);
  expect(error).toMatchObject({ slug: 'network', attempts: 1 });
  expect(arrivals).toHaveLength(1);
});

it('answers a 503 of an archive or a change at once, but waits out a 429', async () => {
  // A 503 can follow a committed archive: a repeat would answer 409 and hide that it worked.
  script = [
    { ...UNAVAILABLE, headers: {} },
    { status: 200, body: { link: LINK, note: 'x' } },
  ];
  const archived = await client({ retry: { baseDelayMs: 10 } })
    .archiveLink('lnk_1')
    .catch((caught: unknown) => caught);
  expect(archived).toMatchObject({ slug: 'unavailable', attempts: 1 });
  expect(arrivals.map((arrival) => arrival.method)).toEqual(['DELETE']);

  arrivals = [];
  script = [
    { ...UNAVAILABLE, headers: {} },
    { status: 200, body: { link: LINK } },
  ];
  const changed = await client({ retry: { baseDelayMs: 10 } })
    .updateLink('lnk_1', { title: 'Spring' })
    .catch((caught: unknown) => caught);
  expect(changed).toMatchObject({ slug: 'unavailable', attempts: 1 });
  expect(arrivals.map((arrival) => arrival.method)).toEqual(['PATCH']);

  arrivals = [];
  script = [
    { ...RATE_LIMITED, headers: { 'Retry-After': '0' } },
    { status: 200, body: { link: LINK } },
  ];
  expect(await client({ retry: { baseDelayMs: 10 } }).updateLink('lnk_1', {})).toEqual(LINK);
  expect(arrivals.map((arrival) => arrival.method)).toEqual(['PATCH', 'PATCH']);
});
