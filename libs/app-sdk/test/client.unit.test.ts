import type { FetchLike } from '../src';
import { LinkServiceClient, LinkServiceError, createClient, retryAfterSeconds } from '../src';

const KEY = 'ls_pk_live_0123456789abcdefghijABCDEFGHIJxy';
const LINK_HOSTS = ['acme.links.example.com'];
const TOKEN = '4fZ0aQ9kLmN2pR7sT1uV';

interface Sent {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: unknown;
}

/** A fetch that records what it is sent and answers `status` with `body` and `headers`. */
function answering(status: number, body: unknown, headers: Record<string, string> = {}) {
  const sent: Sent[] = [];
  const fetch: FetchLike = (url, init) => {
    sent.push({
      url,
      method: init.method,
      headers: init.headers,
      body: init.body === undefined ? undefined : JSON.parse(init.body),
    });
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    return Promise.resolve(new Response(text, { status, headers }));
  };
  return { fetch, sent };
}

describe('LinkServiceClient', () => {
  it('calls /api/v1/sdk under the gateway URL with the publishable key', async () => {
    const { fetch, sent } = answering(200, { link: {}, deepLinkData: null, query: {} });
    const client = createClient({
      baseUrl: 'https://api.acme.example/',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      fetch,
    });
    await client.resolve('https://acme.links.example.com/spring');
    expect(sent).toEqual([
      {
        url: 'https://api.acme.example/api/v1/sdk/resolve',
        method: 'POST',
        headers: {
          accept: 'application/json',
          authorization: `Bearer ${KEY}`,
          'content-type': 'application/json',
        },
        body: { url: 'https://acme.links.example.com/spring' },
      },
    ]);
    expect(client.jwksUrl).toBe('https://api.acme.example/.well-known/jwks.json');
  });

  it('keeps a proxy path prefix and refuses a base that already names the API', () => {
    const { fetch } = answering(200, {});
    const prefixed = createClient({
      baseUrl: 'https://acme.example/links',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      fetch,
    });
    expect(prefixed.jwksUrl).toBe('https://acme.example/links/.well-known/jwks.json');
    expect(
      () =>
        new LinkServiceClient({
          baseUrl: 'https://acme.example/api/v1',
          publishableKey: KEY,
          linkHosts: LINK_HOSTS,
          fetch,
        }),
    ).toThrow(/without \/api\/v1/);
    expect(
      () =>
        new LinkServiceClient({
          baseUrl: 'acme.example',
          publishableKey: KEY,
          linkHosts: LINK_HOSTS,
          fetch,
        }),
    ).toThrow(/http\(s\) URL/);
  });

  it('refuses a secret key: it must never ship in an app', () => {
    const { fetch } = answering(200, {});
    expect(
      () =>
        new LinkServiceClient({
          baseUrl: 'https://api.acme.example',
          publishableKey: 'ls_sk_live_0123456789abcdefghijABCDEFGHIJxy',
          linkHosts: LINK_HOSTS,
          fetch,
        }),
    ).toThrow(/publishable/);
  });

  it('reports only the evidence that can name a link', async () => {
    const { fetch, sent } = answering(201, {
      install: { id: 'ins_1', secret: 's' },
      match: { type: 'none', method: null, clickedAt: null },
      link: null,
      deepLinkData: null,
    });
    const client = createClient({
      baseUrl: 'https://api.acme.example',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      fetch,
    });
    const report = await client.reportInstall({
      platform: 'ios',
      clipboardUrl: 'a note the person copied',
      openedUrl: 'https://acme.example.com/reset-password?token=s3cr3t',
    });
    expect(report.match.type).toBe('none');
    expect(sent[0].body).toEqual({ platform: 'ios' });

    await client.reportInstall({
      platform: 'android',
      playReferrer: `gclid=Cj0KCQ-secret&ls_click=${TOKEN}`,
      openedUrl: 'https://ACME.links.example.com/spring',
    });
    expect(sent[1].body).toEqual({
      platform: 'android',
      playReferrer: `ls_click=${TOKEN}`,
      openedUrl: 'https://ACME.links.example.com/spring',
    });
  });

  it('requires the link hosts, as bare host names', () => {
    const { fetch } = answering(200, {});
    const withHosts = (linkHosts: unknown) => () =>
      new LinkServiceClient({
        baseUrl: 'https://api.acme.example',
        publishableKey: KEY,
        fetch,
        linkHosts: linkHosts as string[],
      });
    expect(withHosts(undefined)).toThrow(TypeError);
    expect(withHosts(undefined)).toThrow(/linkHosts is required/);
    expect(withHosts([])).toThrow(/linkHosts is required/);
    expect(withHosts('acme.links.example.com')).toThrow(/linkHosts is required/);
    for (const bad of [
      'https://acme.links.example.com',
      'acme.links.example.com:443',
      'acme.links.example.com/spring',
      'acme',
      '',
      ' acme.links.example.com',
      7,
    ]) {
      expect(withHosts(['acme.links.example.com', bad])).toThrow(/host names only/);
    }
    expect(withHosts(['ACME.links.example.com', 'acme-test.links.example.com'])).not.toThrow();
  });

  it('erases with the install secret in its header, the id escaped in the path', async () => {
    const { fetch, sent } = answering(200, {
      erased: { installId: 'ins_1', erasedAt: '2026-01-01T00:00:00.000Z', records: 2 },
      receipt: 'a.b.c',
    });
    const client = createClient({
      baseUrl: 'https://api.acme.example',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      fetch,
    });
    const erasure = await client.eraseInstall('ins_1/..', 'the-secret');
    expect(erasure.receipt).toBe('a.b.c');
    expect(sent[0]).toMatchObject({
      url: 'https://api.acme.example/api/v1/sdk/installs/ins_1%2F..',
      method: 'DELETE',
      headers: { 'x-install-secret': 'the-secret' },
      body: undefined,
    });
    expect(sent[0].headers).not.toHaveProperty('content-type');
  });

  it('rejects with the error body, its fields and the request id', async () => {
    const { fetch } = answering(
      422,
      { error: 'invalid_request', message: 'Some fields are invalid.', fields: { platform: 'x' } },
      { 'content-type': 'application/json', 'x-request-id': 'req-1' },
    );
    const client = createClient({
      baseUrl: 'https://api.acme.example',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      fetch,
    });
    const call = client.reportInstall({ platform: 'ios' });
    await expect(call).rejects.toBeInstanceOf(LinkServiceError);
    await expect(call).rejects.toMatchObject({
      name: 'LinkServiceError',
      status: 422,
      error: 'invalid_request',
      message: 'Some fields are invalid.',
      fields: { platform: 'x' },
      retryAfter: undefined,
      requestId: 'req-1',
    });
  });

  it('says when to retry a 429', async () => {
    const { fetch } = answering(
      429,
      { error: 'rate_limited', message: 'Too many requests.' },
      { 'retry-after': '17' },
    );
    const client = createClient({
      baseUrl: 'https://api.acme.example',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      fetch,
    });
    await expect(client.resolve('https://acme.links.example.com/a')).rejects.toMatchObject({
      status: 429,
      error: 'rate_limited',
      retryAfter: 17,
    });
  });

  it('tells a proxy page, a lost network and a timeout apart from the gateway answers', async () => {
    const proxy = answering(502, '<html>Bad gateway</html>', { 'retry-after': '5' });
    const viaProxy = createClient({
      baseUrl: 'https://api.acme.example',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      fetch: proxy.fetch,
    });
    await expect(viaProxy.resolve('https://x.example/a')).rejects.toMatchObject({
      status: 502,
      error: 'unexpected_response',
      retryAfter: 5,
    });

    const offline = createClient({
      baseUrl: 'https://api.acme.example',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      fetch: () => Promise.reject(new TypeError('Network request failed')),
    });
    await expect(offline.resolve('https://x.example/a')).rejects.toMatchObject({
      status: 0,
      error: 'network',
    });

    const silent = createClient({
      baseUrl: 'https://api.acme.example',
      publishableKey: KEY,
      linkHosts: LINK_HOSTS,
      timeoutMs: 20,
      fetch: (_url, init) =>
        new Promise((_resolve, reject) => {
          init.signal.addEventListener('abort', () => {
            reject(new Error('aborted'));
          });
        }),
    });
    await expect(silent.resolve('https://x.example/a')).rejects.toMatchObject({
      status: 0,
      error: 'timeout',
    });
  });
});

describe('retryAfterSeconds', () => {
  it('reads delta seconds and HTTP dates', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    expect(retryAfterSeconds('5', now)).toBe(5);
    expect(retryAfterSeconds('Thu, 01 Jan 2026 00:00:30 GMT', now)).toBe(30);
    expect(retryAfterSeconds('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBe(0);
    expect(retryAfterSeconds('soon', now)).toBeUndefined();
    expect(retryAfterSeconds(null, now)).toBeUndefined();
    expect(retryAfterSeconds('-3', now)).toBeUndefined();
  });
});
