import { inspect } from 'node:util';
import type { FetchLike, Link, LinkServiceErrorOf, LinkServiceClient } from '../src';
import { LinkServiceError, createClient, isLinkServiceError } from '../src';
import { linkNamed } from './fixtures';

const KEY = 'ls_sk_live_0123456789abcdefghijABCDEFGHIJxy';
const BASE = 'https://api.acme.example/api/v1';

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

interface Reply {
  status: number;
  body?: unknown;
  headers?: Record<string, string>;
}

/** A fetch that records what it is sent and gives the replies in turn (the last one repeats). */
function replying(...replies: Reply[]) {
  const sent: Sent[] = [];
  const fetch: FetchLike = (url, init) => {
    sent.push({
      url,
      method: init.method,
      headers: init.headers,
      body: init.body === undefined ? undefined : JSON.parse(init.body),
    });
    const reply = replies[Math.min(sent.length - 1, replies.length - 1)];
    const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body ?? {});
    return Promise.resolve(new Response(text, { status: reply.status, headers: reply.headers }));
  };
  return { fetch, sent };
}

function clientWith(
  fetch: FetchLike,
  options: Partial<ConstructorParameters<typeof LinkServiceClient>[0]> = {},
) {
  return createClient({
    baseUrl: BASE,
    apiKey: KEY,
    fetch,
    retry: { baseDelayMs: 1, maxDelayMs: 50 },
    ...options,
  });
}

/** The rejection of `promise`, which must reject. */
async function failureOf(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('constructing', () => {
  it('takes the base URL with or without /api/v1, and a proxy prefix', () => {
    const { fetch } = replying({ status: 200 });
    expect(clientWith(fetch, { baseUrl: 'https://api.acme.example/' }).apiUrl).toBe(BASE);
    expect(clientWith(fetch, { baseUrl: `${BASE}/` }).apiUrl).toBe(BASE);
    expect(clientWith(fetch, { baseUrl: 'https://acme.example/links' }).apiUrl).toBe(
      'https://acme.example/links/api/v1',
    );
    expect(() => clientWith(fetch, { baseUrl: 'api.acme.example' })).toThrow(/http\(s\) URL/);
    expect(() => clientWith(fetch, { baseUrl: `${BASE}?x=1` })).toThrow(/without query/);
  });

  it('takes secret keys only, reads their environment, and never repeats a key', () => {
    const { fetch } = replying({ status: 200 });
    expect(clientWith(fetch).environment).toBe('live');
    expect(clientWith(fetch, { apiKey: 'ls_sk_test_abcDEF123' }).environment).toBe('test');
    const publishable = 'ls_pk_live_0123456789abcdefghij';
    expect(() => clientWith(fetch, { apiKey: publishable })).toThrow(/publishable/);
    for (const wrong of [
      '',
      'hunter2',
      'ls_sk_prod_abc',
      'Bearer ls_sk_live_abc',
      'ls_sk_live_ abc',
    ]) {
      let message = '';
      try {
        clientWith(fetch, { apiKey: wrong });
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).toMatch(/secret key/);
      if (wrong !== '') expect(message).not.toContain(wrong);
    }
  });

  it('keeps the key out of logs and JSON', () => {
    const { fetch } = replying({ status: 200 });
    const client = clientWith(fetch);
    expect(inspect(client, { depth: 5, showHidden: true })).not.toContain(KEY);
    expect(JSON.stringify(client)).not.toContain(KEY);
    expect(Object.values(client).join(' ')).not.toContain(KEY);
  });

  it('refuses a bad timeout or retry policy', () => {
    const { fetch } = replying({ status: 200 });
    expect(() => clientWith(fetch, { timeoutMs: 0 })).toThrow(RangeError);
    expect(() => clientWith(fetch, { retry: { maxRetries: -1 } })).toThrow(RangeError);
    expect(() => clientWith(fetch, { retry: { maxRetries: 1.5 } })).toThrow(RangeError);
  });
});

describe('requests', () => {
  it('sends each endpoint its method, path, headers and body', async () => {
    const link = linkNamed('spring');
    const { fetch, sent } = replying({ status: 200, body: { link } });
    const client = clientWith(fetch, { userAgent: 'acme-backend/2.3' });
    await client.getLink('lnk_a/b');
    await client.updateLink('lnk_1', { title: null, tags: ['x'] });
    await client.archiveLink('lnk_1');
    await client.getApp();
    await client.getAppById('app_1');
    await client.listLinks({ search: 'spring sale', status: 'active', page: 2, perPage: 50 });
    await client.listLinks();
    expect(sent.map(({ method, url, body }) => [method, url, body])).toEqual([
      ['GET', `${BASE}/links/lnk_a%2Fb`, undefined],
      ['PATCH', `${BASE}/links/lnk_1`, { title: null, tags: ['x'] }],
      ['DELETE', `${BASE}/links/lnk_1`, undefined],
      ['GET', `${BASE}/app`, undefined],
      ['GET', `${BASE}/apps/app_1`, undefined],
      ['GET', `${BASE}/links?search=spring+sale&status=active&page=2&perPage=50`, undefined],
      ['GET', `${BASE}/links`, undefined],
    ]);
    expect(sent[0].headers).toEqual({
      accept: 'application/json',
      authorization: `Bearer ${KEY}`,
      'user-agent': 'linkservice-client-js/0.1.0 acme-backend/2.3',
    });
    expect(sent[1].headers['content-type']).toBe('application/json');
    expect(sent[1].headers['idempotency-key']).toBeUndefined();
  });

  it('sends each webhook endpoint its method, path and body, and answers the resource', async () => {
    const webhook = { id: 'whk_1', url: 'https://hooks.acme.example/' };
    const delivery = { id: 'dlv_1', status: 'pending' };
    const { fetch, sent } = replying(
      { status: 201, body: { webhook, secret: 'whsec_x' } },
      { status: 200, body: { webhooks: [webhook] } },
      { status: 200, body: { webhook } },
      { status: 200, body: { webhook } },
      { status: 200, body: { webhook, secret: 'whsec_y' } },
      { status: 200, body: { deliveries: [delivery], nextCursor: null } },
      { status: 202, body: { delivery } },
    );
    const client = clientWith(fetch);
    const input = { url: webhook.url, eventTypes: ['link.created' as const] };
    expect(await client.createWebhook(input)).toEqual({ webhook, secret: 'whsec_x' });
    expect(await client.listWebhooks()).toEqual({ webhooks: [webhook] });
    expect(await client.getWebhook('whk_a/b')).toEqual(webhook);
    expect(await client.updateWebhook('whk_1', { enabled: false })).toEqual(webhook);
    expect(await client.rotateWebhookSecret('whk_1')).toEqual({ webhook, secret: 'whsec_y' });
    expect(
      await client.listWebhookDeliveries('whk_1', { limit: 5, status: 'failed', cursor: 'dlv_0' }),
    ).toEqual({ deliveries: [delivery], nextCursor: null });
    expect(await client.retryWebhookDelivery('whk_1', 'dlv_1')).toEqual(delivery);
    expect(sent.map(({ method, url, body }) => [method, url, body])).toEqual([
      ['POST', `${BASE}/webhooks`, input],
      ['GET', `${BASE}/webhooks`, undefined],
      ['GET', `${BASE}/webhooks/whk_a%2Fb`, undefined],
      ['PATCH', `${BASE}/webhooks/whk_1`, { enabled: false }],
      ['POST', `${BASE}/webhooks/whk_1/rotate-secret`, undefined],
      ['GET', `${BASE}/webhooks/whk_1/deliveries?limit=5&status=failed&cursor=dlv_0`, undefined],
      ['POST', `${BASE}/webhooks/whk_1/deliveries/dlv_1/retry`, undefined],
    ]);
    expect(sent[0].headers['idempotency-key']).toBeUndefined();
  });

  it('deletes a webhook endpoint, taking the 204 without a body', async () => {
    const sent: string[] = [];
    const fetch: FetchLike = (url, init) => {
      sent.push(`${init.method} ${url}`);
      return Promise.resolve(new Response(null, { status: 204 }));
    };
    await expect(clientWith(fetch).deleteWebhook('whk_1')).resolves.toBeUndefined();
    expect(sent).toEqual([`DELETE ${BASE}/webhooks/whk_1`]);
  });

  it('never retries a webhook creation', async () => {
    const { fetch, sent } = replying({
      status: 503,
      body: { error: 'unavailable', message: 'Try again.' },
      headers: { 'retry-after': '0' },
    });
    const error = await failureOf(
      clientWith(fetch).createWebhook({ url: 'https://h.example/', eventTypes: ['link.created'] }),
    );
    expect(isLinkServiceError(error) && error.slug).toBe('unavailable');
    expect(sent).toHaveLength(1);
  });

  it('asks for analytics with the parameters given, and answers them', async () => {
    const analytics = {
      from: '2026-11-01T00:00:00.000Z',
      to: '2026-11-02T00:00:00.000Z',
      interval: 'day',
      filters: {},
      totals: { clicks: 3, botClicks: 0, uniqueVisitors: 2, uniqueVisitorsSummed: false },
      series: [{ start: '2026-11-01T00:00:00.000Z', clicks: 3, botClicks: 0, uniqueVisitors: 2 }],
      breakdown: null,
    };
    const { fetch, sent } = replying({ status: 200, body: { analytics } });
    const client = clientWith(fetch);
    expect(
      await client.getLinkAnalytics('lnk_a/b', {
        from: '2026-11-01',
        interval: 'day',
        groupBy: 'utmSource',
        platform: 'ios',
        limit: 5,
      }),
    ).toEqual(analytics);
    await client.getAnalytics({ tag: 'spring sale', utmCampaign: 'black friday' });
    await client.getAnalytics();
    expect(sent.map(({ method, url }) => [method, url])).toEqual([
      [
        'GET',
        `${BASE}/links/lnk_a%2Fb/analytics?from=2026-11-01&interval=day&groupBy=utmSource&platform=ios&limit=5`,
      ],
      ['GET', `${BASE}/analytics?tag=spring+sale&utmCampaign=black+friday`],
      ['GET', `${BASE}/analytics`],
    ]);
  });

  it('sends creates under a fresh Idempotency-Key per call, or the caller’s', async () => {
    const { fetch, sent } = replying({
      status: 201,
      body: { link: linkNamed('a') },
      headers: {
        'x-request-id': 'req-1',
        'ratelimit-limit': '300',
        'ratelimit-remaining': '299',
        'ratelimit-reset': '3599',
      },
    });
    const client = clientWith(fetch);
    const created = await client.createLink({ webFallbackUrl: 'https://acme.example' });
    await client.createLink({ webFallbackUrl: 'https://acme.example' });
    await client.createLink({ webFallbackUrl: 'https://acme.example' }, { idempotencyKey: 'o-7' });
    expect(created).toEqual({
      link: linkNamed('a'),
      requestId: 'req-1',
      rateLimit: { limit: 300, remaining: 299, resetSeconds: 3599 },
      replayed: false,
      attempts: 1,
    });
    const keys = sent.map((request) => request.headers['idempotency-key']);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[1]).toMatch(/^[0-9a-f-]{36}$/);
    expect(keys[0]).not.toBe(keys[1]);
    expect(keys[2]).toBe('o-7');
    expect(sent[0]).toMatchObject({
      method: 'POST',
      url: `${BASE}/links`,
      body: { webFallbackUrl: 'https://acme.example' },
    });
    await expect(
      client.createLink({ webFallbackUrl: 'https://acme.example' }, { idempotencyKey: 'é' }),
    ).rejects.toThrow(TypeError);
    expect(sent).toHaveLength(3);
  });

  it('reports a replayed answer', async () => {
    const { fetch } = replying({
      status: 201,
      body: { link: linkNamed('a') },
      headers: { 'idempotent-replayed': 'true' },
    });
    const created = await clientWith(fetch).createLink(
      { webFallbackUrl: 'https://acme.example' },
      { idempotencyKey: 'k' },
    );
    expect(created.replayed).toBe(true);
  });
});

describe('errors', () => {
  it('are a union by slug, narrowed by instanceof and a switch', async () => {
    const { fetch } = replying({
      status: 422,
      body: {
        error: 'invalid_request',
        message: 'Some fields are invalid.',
        fields: { alias: 'in use' },
      },
      headers: { 'x-request-id': 'req-9' },
    });
    const error = await failureOf(
      clientWith(fetch).createLink({ alias: 'taken', webFallbackUrl: 'https://acme.example' }),
    );
    expect(error).toBeInstanceOf(LinkServiceError);
    expect(error).toBeInstanceOf(Error);
    if (!(error instanceof LinkServiceError)) throw error;
    // Compiles only because instanceof narrowed to the union and the slug to its member.
    const fields: Readonly<Record<string, string>> | undefined =
      error.slug === 'invalid_request' ? error.fields : undefined;
    expect(fields).toEqual({ alias: 'in use' });
    expect(error).toMatchObject({
      name: 'LinkServiceError',
      slug: 'invalid_request',
      status: 422,
      message: 'Some fields are invalid.',
      requestId: 'req-9',
      planLimitReached: false,
      attempts: 1,
    });
  });

  it('tell the plan allowance apart: a 422 without fields', async () => {
    const { fetch } = replying({
      status: 422,
      body: { error: 'invalid_request', message: "This app has reached its plan's link allowance" },
    });
    const error = await failureOf(clientWith(fetch).createLink({ webFallbackUrl: 'https://a.b' }));
    expect(isLinkServiceError(error, 'invalid_request')).toBe(true);
    const planError = error as LinkServiceErrorOf<'invalid_request'>;
    expect(planError.planLimitReached).toBe(true);
    expect(planError.fields).toEqual({});
  });

  it('carry Retry-After, RateLimit-* and Allow', async () => {
    const limited = replying({
      status: 429,
      body: { error: 'rate_limited', message: 'limit' },
      headers: {
        'retry-after': '1200',
        'ratelimit-limit': '300',
        'ratelimit-remaining': '0',
        'ratelimit-reset': '1200',
      },
    });
    const error = await failureOf(
      clientWith(limited.fetch).createLink({ webFallbackUrl: 'https://a.b' }),
    );
    expect(error).toMatchObject({
      slug: 'rate_limited',
      status: 429,
      retryAfter: 1200,
      rateLimit: { limit: 300, remaining: 0, resetSeconds: 1200 },
    });
    // 1200 s is past maxDelayMs: not waited out inside the call.
    expect(limited.sent).toHaveLength(1);

    const wrongMethod = replying({
      status: 405,
      body: { error: 'method_not_allowed', message: 'no' },
      headers: { allow: 'GET, PATCH, DELETE' },
    });
    const notAllowed = await failureOf(clientWith(wrongMethod.fetch).getLink('lnk_1'));
    expect(isLinkServiceError(notAllowed, 'method_not_allowed') && notAllowed.allow).toEqual([
      'GET',
      'PATCH',
      'DELETE',
    ]);
  });

  it('name an answer that is not the gateway’s JSON unexpected_response', async () => {
    for (const reply of [
      { status: 502, body: '<html>Bad Gateway</html>' },
      { status: 418, body: { error: 'teapot', message: 'a slug this version does not know' } },
      { status: 200, body: '[1,2]' },
    ]) {
      const { fetch } = replying(reply);
      const error = await failureOf(clientWith(fetch, { retry: { maxRetries: 0 } }).getApp());
      expect(error).toMatchObject({ slug: 'unexpected_response', status: reply.status });
    }
  });

  it('name a rejected fetch network, with the cause', async () => {
    const cause = new TypeError('fetch failed');
    const error = await failureOf(
      clientWith(() => Promise.reject(cause), { retry: { maxRetries: 0 } }).getApp(),
    );
    expect(error).toMatchObject({ slug: 'network', status: 0, cause });
  });
});

describe('retries (no waiting: Retry-After absent, 1 ms steps)', () => {
  const unavailable = { status: 503, body: { error: 'unavailable', message: 'later' } };

  it('retry a read and a keyed create, under the same key, up to maxRetries', async () => {
    const { fetch, sent } = replying(unavailable, unavailable, {
      status: 201,
      body: { link: linkNamed('a') },
    });
    const created = await clientWith(fetch).createLink({ webFallbackUrl: 'https://a.b' });
    expect(created.attempts).toBe(3);
    expect(new Set(sent.map((request) => request.headers['idempotency-key'])).size).toBe(1);

    const failing = replying(unavailable);
    const error = await failureOf(clientWith(failing.fetch).getApp());
    expect(error).toMatchObject({ slug: 'unavailable', attempts: 3 });
    expect(failing.sent).toHaveLength(3);

    const once = replying(unavailable);
    await failureOf(clientWith(once.fetch).getApp({ maxRetries: 0 }));
    expect(once.sent).toHaveLength(1);
  });

  it('never retry a create without a key', async () => {
    const { fetch, sent } = replying(unavailable, { status: 201, body: { link: linkNamed('a') } });
    const client = clientWith(fetch, { generateIdempotencyKey: null });
    const error = await failureOf(client.createLink({ webFallbackUrl: 'https://a.b' }));
    expect(error).toMatchObject({ slug: 'unavailable', attempts: 1 });
    expect(sent).toHaveLength(1);
    expect(sent[0].headers['idempotency-key']).toBeUndefined();
  });

  it('stop waiting when the caller aborts', async () => {
    const { fetch, sent } = replying({ ...unavailable, headers: { 'retry-after': '5' } });
    const aborter = new AbortController();
    const client = clientWith(fetch, { retry: { maxDelayMs: 60_000 } });
    const pending = failureOf(client.getApp({ signal: aborter.signal }));
    setTimeout(() => {
      aborter.abort(new Error('shutting down'));
    }, 20);
    expect(await pending).toEqual(new Error('shutting down'));
    expect(sent).toHaveLength(1);
  });
});

describe('iterateLinks', () => {
  it('walks every page until pageCount, 200 per page unless told', async () => {
    const pages = [
      {
        links: [linkNamed('a'), linkNamed('b')],
        pagination: { page: 1, perPage: 2, total: 5, pageCount: 3 },
      },
      {
        links: [linkNamed('c'), linkNamed('d')],
        pagination: { page: 2, perPage: 2, total: 5, pageCount: 3 },
      },
      { links: [linkNamed('e')], pagination: { page: 3, perPage: 2, total: 5, pageCount: 3 } },
    ];
    const { fetch, sent } = replying(...pages.map((body) => ({ status: 200, body })));
    const client = clientWith(fetch);
    const aliases: string[] = [];
    for await (const link of client.iterateLinks({ tag: 'spring', perPage: 2 })) {
      aliases.push(link.alias);
    }
    expect(aliases).toEqual(['a', 'b', 'c', 'd', 'e']);
    expect(sent.map((request) => request.url)).toEqual([
      `${BASE}/links?tag=spring&page=1&perPage=2`,
      `${BASE}/links?tag=spring&page=2&perPage=2`,
      `${BASE}/links?tag=spring&page=3&perPage=2`,
    ]);

    const empty = replying({
      status: 200,
      body: { links: [], pagination: { page: 1, perPage: 200, total: 0, pageCount: 0 } },
    });
    const none: Link[] = [];
    for await (const link of clientWith(empty.fetch).iterateLinks()) none.push(link);
    expect(none).toEqual([]);
    expect(empty.sent.map((request) => request.url)).toEqual([`${BASE}/links?page=1&perPage=200`]);
  });
});

describe('createLinksInBatches', () => {
  /** A gateway's batch endpoint: creates every entry, or stops at `stopAt` (an input index). */
  function batchGateway(stopAt?: number) {
    const sent: { links: { alias: string }[]; key: string | undefined }[] = [];
    let offset = 0;
    const fetch: FetchLike = (_url, init) => {
      const { links } = JSON.parse(init.body!) as { links: { alias: string }[] };
      sent.push({ links, key: init.headers['idempotency-key'] });
      const stopHere =
        stopAt !== undefined && stopAt >= offset && stopAt < offset + links.length
          ? stopAt - offset
          : undefined;
      const tried = stopHere === undefined ? links.length : stopHere + 1;
      const results = links
        .slice(0, tried)
        .map((entry, index) =>
          index === stopHere
            ? { index, ok: false, error: 'rate_limited', message: 'limit' }
            : { index, ok: true, link: linkNamed(entry.alias) },
        );
      offset += links.length;
      const body = {
        created: stopHere === undefined ? tried : tried - 1,
        failed: stopHere === undefined ? 0 : 1,
        notAttempted: links.length - tried,
        results,
        ...(stopHere !== undefined && {
          stoppedEarly: { reason: 'rate_limited', atIndex: stopHere, message: 'limit' },
        }),
      };
      return Promise.resolve(
        new Response(JSON.stringify(body), {
          status: stopHere === undefined ? 201 : 207,
          headers: stopHere === undefined ? {} : { 'retry-after': '600' },
        }),
      );
    };
    return { fetch, sent };
  }

  const entries = Array.from({ length: 250 }, (_, index) => ({
    alias: `e${index}`,
    webFallbackUrl: 'https://acme.example',
  }));

  it('sends chunks of 100 in order and merges them by index', async () => {
    const { fetch, sent } = batchGateway();
    const seen: number[] = [];
    const report = await clientWith(fetch).createLinksInBatches(entries, {
      onChunk: (chunk) => seen.push(chunk.offset),
    });
    expect(sent.map((request) => request.links.length)).toEqual([100, 100, 50]);
    expect(sent.flatMap((request) => request.links.map((link) => link.alias))).toEqual(
      entries.map((entry) => entry.alias),
    );
    // One run key the client made, returned so the caller can re-run the import under it.
    expect(report.idempotencyKey).toMatch(/^[0-9a-f-]{36}$/);
    expect(sent.map((request) => request.key)).toEqual(
      [0, 1, 2].map((n) => `${report.idempotencyKey!}:${n}`),
    );
    expect(report.chunks.map((chunk) => chunk.idempotencyKey)).toEqual(
      sent.map((request) => request.key),
    );
    expect(seen).toEqual([0, 100, 200]);
    expect(report).toMatchObject({ created: 250, failed: 0, notAttempted: 0, unknown: 0 });
    expect(report.results.map((result) => result.index)).toEqual(entries.map((_, i) => i));
    expect(report.results.map((result) => (result.ok ? result.link.alias : null))).toEqual(
      entries.map((entry) => entry.alias),
    );
    expect(report.chunks.map(({ offset, size, status }) => [offset, size, status])).toEqual([
      [0, 100, 201],
      [100, 100, 201],
      [200, 50, 201],
    ]);
    expect(report.stoppedEarly).toBeUndefined();
    expect(report.interrupted).toBeUndefined();
  });

  it('stops at a chunk that stopped early; later entries are not attempted', async () => {
    const { fetch, sent } = batchGateway(130);
    const report = await clientWith(fetch).createLinksInBatches(entries, {
      idempotencyKey: 'import-7',
    });
    expect(sent.map((request) => request.key)).toEqual(['import-7:0', 'import-7:1']);
    expect(report).toMatchObject({
      idempotencyKey: 'import-7',
      created: 130,
      failed: 1,
      notAttempted: 69 + 50,
      unknown: 0,
      stoppedEarly: { reason: 'rate_limited', atIndex: 130 },
      retryAfter: 600,
    });
    expect(report.results.at(-1)).toMatchObject({ index: 130, ok: false, error: 'rate_limited' });
  });

  /** The batch gateway, except that its `failAt`-th request (1-based) answers `failure`. */
  function failingAt(failAt: number, failure: Reply) {
    let calls = 0;
    const created = batchGateway();
    const fetch: FetchLike = (url, init) => {
      calls += 1;
      if (calls === failAt) {
        const text =
          typeof failure.body === 'string' ? failure.body : JSON.stringify(failure.body ?? {});
        return Promise.resolve(
          new Response(text, { status: failure.status, headers: failure.headers }),
        );
      }
      return created.fetch(url, init);
    };
    return { fetch, sent: created.sent, calls: () => calls };
  }

  it('counts a chunk whose failure may have created links as unknown, with its key', async () => {
    for (const failure of [
      { status: 500, body: { error: 'internal', message: 'oops' } },
      { status: 503, body: { error: 'unavailable', message: 'later' } },
      { status: 409, body: { error: 'conflict', message: 'still running' } },
      { status: 502, body: '<html>bad gateway</html>' },
    ]) {
      const gateway = failingAt(2, failure);
      const report = await clientWith(gateway.fetch, {
        retry: { maxRetries: 0 },
      }).createLinksInBatches(entries);
      expect(gateway.calls()).toBe(2);
      expect(report).toMatchObject({ created: 100, failed: 0, notAttempted: 50, unknown: 100 });
      expect(report.created + report.failed + report.notAttempted + report.unknown).toBe(250);
      expect(report.interrupted).toMatchObject({
        atIndex: 100,
        size: 100,
        outcomeUnknown: true,
        idempotencyKey: `${report.idempotencyKey!}:1`,
        error: { status: failure.status },
      });
      expect(report.chunks).toHaveLength(1);
    }
  });

  it('counts a 503 chunk as unknown after its retries, under one key', async () => {
    const unavailable = { status: 503, body: { error: 'unavailable', message: 'later' } };
    const { fetch, sent } = replying(unavailable);
    const report = await clientWith(fetch).createLinksInBatches(entries.slice(0, 10), {
      idempotencyKey: 'import-8',
    });
    expect(sent.map((request) => request.headers['idempotency-key'])).toEqual([
      'import-8:0',
      'import-8:0',
      'import-8:0',
    ]);
    expect(report).toMatchObject({ created: 0, notAttempted: 0, unknown: 10 });
    expect(report.interrupted).toMatchObject({
      outcomeUnknown: true,
      idempotencyKey: 'import-8:0',
      error: { slug: 'unavailable', attempts: 3 },
    });
  });

  it('counts a chunk refused as a whole as not attempted: nothing of it was created', async () => {
    for (const failure of [
      {
        status: 429,
        body: { error: 'rate_limited', message: 'limit' },
        headers: { 'retry-after': '3600' },
      },
      { status: 422, body: { error: 'invalid_request', message: 'bad', fields: { links: 'x' } } },
    ]) {
      const gateway = failingAt(2, failure);
      const report = await clientWith(gateway.fetch).createLinksInBatches(entries, {
        idempotencyKey: 'import-9',
      });
      expect(gateway.calls()).toBe(2);
      expect(report).toMatchObject({ created: 100, notAttempted: 150, unknown: 0 });
      expect(report.interrupted).toMatchObject({
        atIndex: 100,
        outcomeUnknown: false,
        idempotencyKey: 'import-9:1',
      });
    }
  });

  it('sends chunks without keys only when the client can make none', async () => {
    const { fetch, sent } = batchGateway();
    const report = await clientWith(fetch, { generateIdempotencyKey: null }).createLinksInBatches(
      entries,
    );
    expect(sent.map((request) => request.key)).toEqual([undefined, undefined, undefined]);
    expect(report.idempotencyKey).toBeUndefined();
    expect(report.chunks.map((chunk) => chunk.idempotencyKey)).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('refuses a run key too long for its chunk suffix', async () => {
    const { fetch, sent } = batchGateway();
    await expect(
      clientWith(fetch).createLinksInBatches(entries, { idempotencyKey: 'k'.repeat(254) }),
    ).rejects.toThrow(TypeError);
    expect(sent).toHaveLength(0);
  });
});
