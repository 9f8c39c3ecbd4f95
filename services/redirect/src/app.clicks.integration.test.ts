import { eventually, insertLink } from '@linkservice/testing';
import {
  IPHONE,
  clickCount,
  createTestApp,
  redirectForFile,
  startRedirect,
} from './testing/harness';

// The link host counting clicks and serving from its cache (see README, "Clicks").

const h = redirectForFile();

describe('click counting', () => {
  it('counts each redirecting GET once, and neither HEAD, 404 nor 410', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    const expired = await insertLink(h.db, app, { expires_at: new Date(Date.now() - 1000) });
    await h.get(`/${link.alias}`, { host: app.liveHost });
    await h.get(`/${link.alias}`, { host: app.liveHost, headers: { 'user-agent': IPHONE } });
    await h.get(`/${link.alias}`, { host: app.liveHost, method: 'HEAD' });
    await h.get(`/${expired.alias}`, { host: app.liveHost });
    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(2);
    expect(await clickCount(h.db, expired.id)).toBe(0);
  });

  it('counts 500 concurrent clicks exactly', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    const answers = await Promise.all(
      Array.from({ length: 500 }, () => h.get(`/${link.alias}`, { host: app.liveHost })),
    );
    expect(answers.every((a) => a.status === 302)).toBe(true);
    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(500);
  });

  it('counts archived links that still redirect', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { archived_at: new Date() });
    await h.get(`/${link.alias}`, { host: app.liveHost });
    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(1);
  });

  it('counts clicks answered from the cache: each GET once, no HEAD, none once expired', async () => {
    const app = await createTestApp(h.db);
    const expiresAt = new Date(Math.ceil((Date.now() + 1500) / 1000) * 1000);
    const link = await insertLink(h.db, app, { expires_at: expiresAt });
    const archived = await insertLink(h.db, app, {
      expires_at: new Date(Date.now() - 1000),
      archived_at: new Date(),
    });
    const get = (alias: string, method = 'GET') =>
      h.get(`/${alias}`, { host: app.liveHost, method });
    let redirected = 0;
    const follow = async (method = 'GET') => {
      const res = await get(link.alias, method);
      if (res.status === 302 && method === 'GET') redirected += 1;
      return res;
    };
    expect((await follow()).status).toBe(302);
    expect((await get(archived.alias)).status).toBe(302);
    await h.cached(app, link.alias);
    await h.cached(app, archived.alias);

    // Hits: the lookup script counts them, in the same round trip.
    for (const method of ['GET', 'HEAD', 'GET', 'HEAD', 'GET']) await follow(method);
    for (let i = 0; i < 3; i++) expect((await get(archived.alias)).status).toBe(302);
    expect((await get(archived.alias, 'HEAD')).status).toBe(302);
    // Until the cached link expires (evaluated against the clock), then 410s count nothing.
    const after = await eventually(
      async () => {
        const res = await follow();
        return res.status !== 302 && res;
      },
      { timeoutMs: 5_000 },
    );
    expect(after.status).toBe(410);
    expect((await follow()).status).toBe(410);

    expect(redirected).toBeGreaterThanOrEqual(4);
    // A lookup whose Redis call timed out on a busy machine leaves its click uncertain until a
    // later flusher pass reconciles it (README "Clicks: counted at most once"): flush until
    // every count is in, and never past it.
    const counts = await eventually(
      async () => {
        await h.resources.flusher.flush();
        const linkClicks = await clickCount(h.db, link.id);
        const archivedClicks = await clickCount(h.db, archived.id);
        return linkClicks >= redirected && archivedClicks >= 4 && { linkClicks, archivedClicks };
      },
      { timeoutMs: 10_000, intervalMs: 200, what: 'every click flushed' },
    );
    expect(counts).toEqual({ linkClicks: redirected, archivedClicks: 4 });
  });

  it('shows a click in the database within 5 s with the periodic flush', async () => {
    const periodic = await startRedirect({ CLICK_FLUSH_INTERVAL_MS: '1000' });
    periodic.resources.flusher.start();
    try {
      const app = await createTestApp(periodic.db);
      const link = await insertLink(periodic.db, app);
      await periodic.get(`/${link.alias}`, { host: app.liveHost });
      const counted = await eventually(
        async () => (await clickCount(periodic.db, link.id)) === 1 && 1,
        { timeoutMs: 5_000, what: 'the periodic flush' },
      );
      expect(counted).toBe(1);
    } finally {
      await periodic.close();
    }
  });
});

describe('resolution cache', () => {
  it('serves a resolved link from the cache, without Postgres', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: 'https://example.com/v1' });
    expect((await h.get(`/${link.alias}`, { host: app.liveHost })).headers.get('location')).toBe(
      'https://example.com/v1',
    );
    await h.cached(app, link.alias);
    // A change nobody announced (no invalidation) is invisible: the answer came from Redis.
    await h.db
      .updateTable('links')
      .set({ web_fallback_url: 'https://example.com/v2' })
      .where('id', '=', link.id)
      .execute();
    expect((await h.get(`/${link.alias}`, { host: app.liveHost })).headers.get('location')).toBe(
      'https://example.com/v1',
    );
  });

  it('shows a PATCH on the very next redirect once the writer invalidated', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: 'https://example.com/v1' });
    await h.get(`/${link.alias}`, { host: app.liveHost });
    await h.db
      .updateTable('links')
      .set({ web_fallback_url: 'https://example.com/v2', ios_fallback_url: 'https://ios.example' })
      .where('id', '=', link.id)
      .execute();
    await h.cache.invalidate([
      { subdomainKey: app.subdomainKey, environment: 'live', alias: link.alias },
    ]);
    expect((await h.get(`/${link.alias}`, { host: app.liveHost })).headers.get('location')).toBe(
      'https://example.com/v2',
    );
    const ios = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'user-agent': IPHONE },
    });
    expect(ios.headers.get('location')).toBe('https://ios.example');
  });

  it('shows an expiry set by PATCH on the very next redirect', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app);
    await h.get(`/${link.alias}`, { host: app.liveHost });
    await h.db
      .updateTable('links')
      .set({ expires_at: new Date(Date.now() - 1000) })
      .where('id', '=', link.id)
      .execute();
    await h.cache.invalidate([
      { subdomainKey: app.subdomainKey, environment: 'live', alias: link.alias },
    ]);
    expect((await h.get(`/${link.alias}`, { host: app.liveHost })).status).toBe(410);
  });

  it('expires a cached link on time, without any invalidation', async () => {
    const app = await createTestApp(h.db);
    const expiresAt = new Date(Math.ceil((Date.now() + 1500) / 1000) * 1000);
    const link = await insertLink(h.db, app, { expires_at: expiresAt });
    expect((await h.get(`/${link.alias}`, { host: app.liveHost })).status).toBe(302);
    await h.cached(app, link.alias);
    const after = await eventually(
      async () => {
        const res = await h.get(`/${link.alias}`, { host: app.liveHost });
        return res.status !== 302 && res;
      },
      { timeoutMs: 5_000 },
    );
    expect(after.status).toBe(410);
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt.getTime());
  });

  it('remembers an unknown alias, and resolves it at once when it is created', async () => {
    const app = await createTestApp(h.db);
    expect((await h.get('/later', { host: app.liveHost })).status).toBe(404);
    await h.cached(app, 'later');
    // Created without telling the cache: the negative entry still answers (Postgres is spared).
    const link = await insertLink(h.db, app, { alias: 'later' });
    expect((await h.get('/later', { host: app.liveHost })).status).toBe(404);
    // The worker invalidates after it commits: the very next redirect resolves.
    await h.cache.invalidate([
      { subdomainKey: app.subdomainKey, environment: 'live', alias: 'later' },
    ]);
    const res = await h.get('/later', { host: app.liveHost });
    expect(res.status).toBe(302);
    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(1);
  });

  it('shows an archive on the very next redirect (still redirecting, still counting)', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { expires_at: new Date(Date.now() + 60_000) });
    await h.get(`/${link.alias}`, { host: app.liveHost });
    await h.db
      .updateTable('links')
      .set({ archived_at: new Date() })
      .where('id', '=', link.id)
      .execute();
    await h.cache.invalidate([
      { subdomainKey: app.subdomainKey, environment: 'live', alias: link.alias },
    ]);
    expect((await h.get(`/${link.alias}`, { host: app.liveHost })).status).toBe(302);
    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(2);
  });
});

describe('without Redis', () => {
  it('keeps redirecting from Postgres and still counts the clicks', async () => {
    const degraded = await startRedirect({
      REDIS_URL: 'redis://127.0.0.1:1',
      CLICK_FLUSH_INTERVAL_MS: '600000',
    });
    try {
      const app = await createTestApp(degraded.db);
      const link = await insertLink(degraded.db, app, {
        web_fallback_url: 'https://example.com/no-redis',
      });
      const res = await degraded.get(`/${link.alias}`, { host: app.liveHost });
      expect(res.status).toBe(302);
      expect(res.headers.get('location')).toBe('https://example.com/no-redis');
      expect((await degraded.get('/readyz', { host: 'probe' })).status).toBe(503);
      await degraded.resources.flusher.flush().catch(() => undefined);
      expect(await clickCount(degraded.db, link.id)).toBe(1);
      // Its click token waits in memory for Redis (dropped once it expires).
      expect(degraded.resources.clicks.untokenedCount).toBe(1);
    } finally {
      await degraded.close();
    }
  });
});
