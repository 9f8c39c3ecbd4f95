import { insertLink } from '@linkservice/testing';
import type { Answer } from './testing/harness';
import {
  ANDROID,
  IPHONE,
  LINK_DOMAIN,
  clickCount,
  createTestApp,
  redirectForFile,
  startRedirect,
} from './testing/harness';

const IPAD = 'Mozilla/5.0 (iPad; CPU OS 16_6 like Mac OS X) AppleWebKit/605.1.15 Mobile/15E148';
const IPOD = 'Mozilla/5.0 (iPod touch; CPU iPhone OS 15_7 like Mac OS X) AppleWebKit/605.1.15';

const h = redirectForFile();

/** An HTML page no cache may keep, answered with `status` and saying `words`. */
function expectUncachedPage(res: Answer, status: number, words: string) {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.text).toContain(words);
}

describe('resolving links', () => {
  it('redirects live and test hosts to the link of their own environment', async () => {
    const app = await createTestApp(h.db);
    await insertLink(h.db, app, { alias: 'promo', web_fallback_url: 'https://example.com/live' });
    await insertLink(h.db, app, {
      alias: 'promo',
      environment: 'test',
      web_fallback_url: 'https://example.com/test',
    });

    const live = await h.get('/promo', { host: app.liveHost });
    expect(live.status).toBe(302);
    expect(live.headers.get('location')).toBe('https://example.com/live');
    expect(live.headers.get('cache-control')).toBe('no-store');
    expect(live.text).toBe('');

    const test = await h.get('/promo', { host: app.testHost });
    expect(test.status).toBe(302);
    expect(test.headers.get('location')).toBe('https://example.com/test');
  });

  it('does not resolve a link of one environment on the other host', async () => {
    const app = await createTestApp(h.db);
    const onlyTest = await insertLink(h.db, app, { environment: 'test' });
    const onlyLive = await insertLink(h.db, app, { environment: 'live' });
    expect((await h.get(`/${onlyTest.alias}`, { host: app.liveHost })).status).toBe(404);
    expect((await h.get(`/${onlyLive.alias}`, { host: app.testHost })).status).toBe(404);
  });

  it("does not resolve another app's link", async () => {
    const owner = await createTestApp(h.db);
    const other = await createTestApp(h.db);
    const link = await insertLink(h.db, owner);
    expect((await h.get(`/${link.alias}`, { host: other.liveHost })).status).toBe(404);
  });

  it.each([
    ['iPhone', IPHONE],
    ['iPad', IPAD],
    ['iPod', IPOD],
  ])('sends an %s to the iOS fallback', async (_device, ua) => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, {
      web_fallback_url: 'https://example.com/web',
      ios_fallback_url: 'https://apps.apple.com/app/id42',
    });
    const res = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'user-agent': ua },
    });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://apps.apple.com/app/id42');
  });

  it('sends Android, desktop and UA-less clients to the web fallback', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, {
      web_fallback_url: 'https://example.com/web',
      ios_fallback_url: 'https://apps.apple.com/app/id42',
    });
    const clients: Record<string, string>[] = [
      { 'user-agent': ANDROID },
      { 'user-agent': 'curl/8.5.0' },
      {},
    ];
    for (const headers of clients) {
      const res = await h.get(`/${link.alias}`, { host: app.liveHost, headers });
      expect(res.headers.get('location')).toBe('https://example.com/web');
    }
  });

  it('sends iOS to the web fallback when the link has no iOS fallback', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: 'https://example.com/web' });
    const res = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'user-agent': IPHONE },
    });
    expect(res.headers.get('location')).toBe('https://example.com/web');
  });

  it('keeps redirecting an archived link', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, {
      web_fallback_url: 'https://example.com/archived',
      archived_at: new Date(),
    });
    const res = await h.get(`/${link.alias}`, { host: app.liveHost });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://example.com/archived');
  });

  it('answers an expired link with a 410 page', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { expires_at: new Date(Date.now() - 1000) });
    const res = await h.get(`/${link.alias}`, { host: app.liveHost });
    expectUncachedPage(res, 410, 'expired');
  });

  it('answers unknown aliases and unknown hosts with a 404 page', async () => {
    const app = await createTestApp(h.db);
    for (const [host, path] of [
      [app.liveHost, '/nope'],
      [`zz${app.subdomainKey}.${LINK_DOMAIN}`, '/nope'],
      ['example.com', '/nope'],
      [app.liveHost, '/'],
      [app.liveHost, '/a/b'],
    ] as const) {
      const res = await h.get(path, { host });
      expectUncachedPage(res, 404, 'Link not found');
    }
  });

  it('treats aliases as case-sensitive', async () => {
    const app = await createTestApp(h.db);
    await insertLink(h.db, app, { alias: 'Promo', web_fallback_url: 'https://example.com/P' });
    await insertLink(h.db, app, { alias: 'promo', web_fallback_url: 'https://example.com/p' });
    expect((await h.get('/Promo', { host: app.liveHost })).headers.get('location')).toBe(
      'https://example.com/P',
    );
    expect((await h.get('/promo', { host: app.liveHost })).headers.get('location')).toBe(
      'https://example.com/p',
    );
    expect((await h.get('/PROMO', { host: app.liveHost })).status).toBe(404);
  });

  it('decodes escaped alias characters and refuses anything that is not an alias', async () => {
    const app = await createTestApp(h.db);
    await insertLink(h.db, app, { alias: 'Promo-1', web_fallback_url: 'https://example.com/x' });
    expect((await h.get('/%50romo%2D1', { host: app.liveHost })).headers.get('location')).toBe(
      'https://example.com/x',
    );
    for (const path of ['/Promo-1/', '/Promo%2F1', '/Promo-1%', '/%zz', '/Promo-1%00']) {
      expect((await h.get(path, { host: app.liveHost })).status).toBe(404);
    }
  });

  it('passes the query string through, and ignores the host case and port', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: 'https://example.com/q' });
    const res = await h.get(`/${link.alias}?utm_source=mail`, {
      host: `${app.liveHost.toUpperCase()}:8081`,
    });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://example.com/q?utm_source=mail');
  });

  it('answers HEAD like GET, without a body', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: 'https://example.com/h' });
    const redirect = await h.get(`/${link.alias}`, { host: app.liveHost, method: 'HEAD' });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get('location')).toBe('https://example.com/h');
    expect(redirect.headers.get('cache-control')).toBe('no-store');
    const missing = await h.get('/missing', { host: app.liveHost, method: 'HEAD' });
    expect(missing.status).toBe(404);
    expect(missing.text).toBe('');
    expect(Number(missing.headers.get('content-length'))).toBeGreaterThan(0);
  });

  it.each(['POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'])('answers %s with 405', async (method) => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    const res = await h.get(`/${link.alias}`, { host: app.liveHost, method });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(res.headers.get('cache-control')).toBe('no-store');
    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(0);
  });

  it('sends a stored URL that a header cannot carry in escaped form', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: 'https://example.com/café' });
    const res = await h.get(`/${link.alias}`, { host: app.liveHost });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://example.com/caf%C3%A9');
  });
});

describe('X-Forwarded-Host', () => {
  it('is ignored unless TRUST_FORWARDED_HOST is set', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    const viaProxy = { host: '10.0.0.7:8081', headers: { 'x-forwarded-host': app.liveHost } };
    expect((await h.get(`/${link.alias}`, viaProxy)).status).toBe(404);
    // And a forged header cannot move a request to another app's host.
    const other = await createTestApp(h.db);
    const forged = { host: other.liveHost, headers: { 'x-forwarded-host': app.liveHost } };
    expect((await h.get(`/${link.alias}`, forged)).status).toBe(404);
  });

  it('decides the host when TRUST_FORWARDED_HOST is set', async () => {
    const trusting = await startRedirect({
      TRUST_FORWARDED_HOST: 'true',
      CLICK_FLUSH_INTERVAL_MS: '600000',
    });
    try {
      const app = await createTestApp(trusting.db);
      const link = await insertLink(trusting.db, app, {
        web_fallback_url: 'https://example.com/fwd',
      });
      const res = await trusting.get(`/${link.alias}`, {
        host: '10.0.0.7:8081',
        headers: { 'x-forwarded-host': `${app.liveHost}, 10.0.0.1` },
      });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('https://example.com/fwd');
      // Without the header, Host still decides.
      expect((await trusting.get(`/${link.alias}`, { host: app.liveHost })).status).toBe(302);
    } finally {
      await trusting.close();
    }
  });
});

describe('X-Request-Id', () => {
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

  it('is on every answer: redirect, 404, 410, 405, association file and probe', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    const expired = await insertLink(h.db, app, { expires_at: new Date(Date.now() - 1_000) });
    const answers = await Promise.all([
      h.get(`/${link.alias}`, { host: app.liveHost }),
      h.get('/nope', { host: app.liveHost }),
      h.get(`/${expired.alias}`, { host: app.liveHost }),
      h.get(`/${link.alias}`, { host: app.liveHost, method: 'POST' }),
      h.get('/.well-known/assetlinks.json', { host: app.liveHost }),
      h.get('/healthz', { host: `127.0.0.1:${h.port}` }),
      h.get('/readyz', { host: `127.0.0.1:${h.port}` }),
    ]);
    expect(answers.map((a) => a.status)).toEqual([302, 404, 410, 405, 404, 200, 200]);
    for (const answer of answers) expect(answer.headers.get('x-request-id')).toMatch(UUID);
    expect(new Set(answers.map((a) => a.headers.get('x-request-id'))).size).toBe(answers.length);
  });

  it("echoes the caller's id when it is sane, and replaces it otherwise", async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    const sane = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'x-request-id': 'edge-7f3a.1:2' },
    });
    expect(sane.headers.get('x-request-id')).toBe('edge-7f3a.1:2');
    for (const offered of ['has spaces', 'x'.repeat(129), '<script>']) {
      const res = await h.get(`/${link.alias}`, {
        host: app.liveHost,
        headers: { 'x-request-id': offered },
      });
      expect(res.headers.get('x-request-id')).toMatch(UUID);
    }
  });
});

describe('probes', () => {
  it('answers /healthz and /readyz on hosts that are not link hosts', async () => {
    const health = await h.get('/healthz', { host: `127.0.0.1:${h.port}` });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.text)).toEqual({ status: 'ok' });
    const ready = await h.get('/readyz', { host: 'redirect.internal' });
    expect(ready.status).toBe(200);
    expect(JSON.parse(ready.text)).toEqual({ status: 'ready' });
  });

  it('does not answer probes on a link host (those paths are reserved aliases there)', async () => {
    const app = await createTestApp(h.db);
    expect((await h.get('/healthz', { host: app.liveHost })).status).toBe(404);
    expect((await h.get('/readyz', { host: app.testHost })).status).toBe(404);
  });

  it('answers other paths of a non-link host with 404', async () => {
    expect((await h.get('/promo', { host: `127.0.0.1:${h.port}` })).status).toBe(404);
  });
});
