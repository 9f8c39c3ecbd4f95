import { NOT_WRITABLE_MESSAGE } from './redis-calls';
import { insertLink } from '@linkservice/testing';
import type { Answer } from './testing/harness';
import {
  ANDROID,
  FLUSH_ONLY_WHEN_ASKED,
  IPHONE,
  LINK_DOMAIN,
  clickCount,
  clickTokensOfApp,
  createTestApp,
  redirectForFile,
  setDeferredPage,
  storedClickToken,
} from './testing/harness';

/**
 * The link host for people (app-interface.md): query passthrough, click tokens, the Play Store
 * referrer and the iOS deferred page (link previews: app.previews.integration.test.ts), through the real service on real Postgres
 * and Redis.
 */

const PLAY = 'https://play.google.com/store/apps/details?id=com.example.app';
const APP_STORE = 'https://apps.apple.com/app/id42';
const TOKEN_TTL_SECONDS = 900;
const TOKEN = /^[0-9A-Za-z]{22}$/;

const h = redirectForFile({
  ...FLUSH_ONLY_WHEN_ASKED,
  CLICK_TOKEN_TTL_SECONDS: String(TOKEN_TTL_SECONDS),
});

/** What the link host stored for a token it handed out, or null. */
const stored = (token: string) =>
  storedClickToken(h.resources.deps.redis, h.config.REDIS_PREFIX, token);

/** The `ls_click` token in a Play Store Location (inside the referrer value). */
function playToken(answer: Answer): string {
  const token = /ls_click%3D([^&#%]*)/.exec(answer.headers.get('location') ?? '')?.[1];
  if (token === undefined) throw new Error(`no ls_click in ${answer.headers.get('location')}`);
  return token;
}

/** The token in the deferred page's link to copy. */
function pageToken(answer: Answer): string {
  const token = /\?ls_click=([^"&]*)"/.exec(answer.text)?.[1];
  if (token === undefined) throw new Error('no ls_click in the page');
  return token;
}

const tokensOfApp = (appId: string) => clickTokensOfApp(h, appId);

describe('query passthrough', () => {
  it('appends the raw query to the fallback, before its fragment, on a miss and on a hit', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, {
      web_fallback_url: 'https://example.com/p?src=link#top',
      ios_fallback_url: APP_STORE,
    });
    const query = 'utm_source=mail&q=caf%C3%A9+%2B&src=tap&empty=&flag';
    const miss = await h.get(`/${link.alias}?${query}`, { host: app.liveHost });
    expect(miss.headers.get('location')).toBe(`https://example.com/p?src=link&${query}#top`);
    await h.cached(app, link.alias);
    const hit = await h.get(`/${link.alias}?${query}`, { host: app.liveHost });
    expect(hit.headers.get('location')).toBe(`https://example.com/p?src=link&${query}#top`);

    const ios = await h.get(`/${link.alias}?a=1`, {
      host: app.liveHost,
      headers: { 'user-agent': IPHONE },
    });
    expect(ios.headers.get('location')).toBe(`${APP_STORE}?a=1`);
    // `?` alone adds nothing.
    expect((await h.get(`/${link.alias}?`, { host: app.liveHost })).headers.get('location')).toBe(
      'https://example.com/p?src=link#top',
    );
  });
});

describe('click tokens', () => {
  it('stores a token per counted click, on a miss and on a hit, with its link, click time and expiry', async () => {
    const app = await createTestApp(h.db);
    const live = await insertLink(h.db, app, { web_fallback_url: PLAY });
    const test = await insertLink(
      h.db,
      { appId: app.appId, environment: 'test' },
      {
        web_fallback_url: PLAY,
      },
    );
    const before = Date.now();
    const onMiss = await h.get(`/${live.alias}`, { host: app.liveHost });
    await h.cached(app, live.alias);
    const onHit = await h.get(`/${live.alias}`, { host: app.liveHost });
    const onTest = await h.get(`/${test.alias}`, { host: app.testHost });
    const after = Date.now();
    const minted = [onMiss, onHit, onTest].map(playToken);
    for (const token of minted) expect(token).toMatch(TOKEN);
    expect(new Set(minted).size).toBe(3);

    // Stored with the click, in the same round trip: matchable at once, no flush needed.
    const records = await Promise.all(minted.map(stored));
    expect(records.map((record) => record?.linkId)).toEqual([live.id, live.id, test.id]);
    for (const record of records) {
      expect(record?.clickedAt).toBeGreaterThanOrEqual(before);
      expect(record?.clickedAt).toBeLessThanOrEqual(after);
      // Expires CLICK_TOKEN_TTL_SECONDS after its click (a few ms have passed since).
      expect(record?.ttlMs).toBeGreaterThan(TOKEN_TTL_SECONDS * 1000 - 5_000);
      expect(record?.ttlMs).toBeLessThanOrEqual(TOKEN_TTL_SECONDS * 1000);
    }
    await h.resources.flusher.flush();
    expect(await clickCount(h.db, live.id)).toBe(2);
    expect(await tokensOfApp(app.appId)).toBe(3);
  });

  it('mints none for HEAD, 404 or 410, and HEAD carries no ls_click', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: PLAY });
    const expired = await insertLink(h.db, app, { expires_at: new Date(Date.now() - 1000) });
    const head = await h.get(`/${link.alias}?a=1`, { host: app.liveHost, method: 'HEAD' });
    expect(head.status).toBe(302);
    expect(head.headers.get('location')).toBe(`${PLAY}&a=1`);
    await h.cached(app, link.alias);
    const cachedHead = await h.get(`/${link.alias}`, { host: app.liveHost, method: 'HEAD' });
    expect(cachedHead.headers.get('location')).toBe(PLAY);
    expect((await h.get(`/${expired.alias}`, { host: app.liveHost })).status).toBe(410);
    await h.cached(app, expired.alias);
    expect((await h.get(`/${expired.alias}`, { host: app.liveHost })).status).toBe(410);
    expect((await h.get('/nope', { host: app.liveHost })).status).toBe(404);
    await h.resources.flusher.flush();
    expect(await tokensOfApp(app.appId)).toBe(0);
    expect(await clickCount(h.db, link.id)).toBe(0);
  });

  it('keeps the token of a click Redis could not take in memory, and lands it once Redis is back', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: PLAY });
    const redis = h.resources.deps.redis;
    // Redis "down" for this request: the lookup and the click's write are both refused unsent,
    // as ioredis refuses them while disconnected (no offline queue).
    const calls = jest.spyOn(redis, 'evalsha').mockRejectedValue(new Error(NOT_WRITABLE_MESSAGE));
    let res: Answer;
    try {
      res = await h.get(`/${link.alias}`, { host: app.liveHost });
    } finally {
      calls.mockRestore();
    }
    expect(res.status).toBe(302);
    const token = playToken(res);
    // Not in Redis: held in memory until the flusher hands it back.
    expect(await stored(token)).toBeNull();

    await h.resources.flusher.flush();
    expect(await stored(token)).toMatchObject({ linkId: link.id });
    expect(await clickCount(h.db, link.id)).toBe(1);
  });
});

describe('Play Store fallback', () => {
  it('carries the token in the install referrer whatever the user agent, keeping a referrer given', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, {
      web_fallback_url: `${PLAY}&referrer=utm_source%3Dsite&hl=en`,
    });
    const android = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'user-agent': ANDROID },
    });
    const token = playToken(android);
    expect(android.headers.get('location')).toBe(
      `${PLAY}&referrer=utm_source%3Dsite%26ls_click%3D${token}&hl=en`,
    );
    // iOS without an iOS fallback, and a desktop: the same listing, each its own token.
    const iphone = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'user-agent': IPHONE },
    });
    const desktop = await h.get(`/${link.alias}`, { host: app.liveHost });
    expect(new Set([token, playToken(iphone), playToken(desktop)]).size).toBe(3);

    for (const minted of [token, playToken(iphone), playToken(desktop)]) {
      expect(await stored(minted)).toMatchObject({ linkId: link.id });
    }
  });

  it('puts the token in a referrer the passthrough query brought too', async () => {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, { web_fallback_url: PLAY });
    const res = await h.get(`/${link.alias}?referrer=utm_source%3Dmail`, { host: app.liveHost });
    const token = playToken(res);
    expect(res.headers.get('location')).toBe(
      `${PLAY}&referrer=utm_source%3Dmail%26ls_click%3D${token}`,
    );
  });
});

describe('iOS deferred page', () => {
  async function optedInLink() {
    const app = await createTestApp(h.db);
    const link = await insertLink(h.db, app, {
      title: 'Summer <sale>',
      web_fallback_url: 'https://example.com/web',
      ios_fallback_url: APP_STORE,
    });
    await insertLink(
      h.db,
      { appId: app.appId, environment: 'test' },
      {
        alias: link.alias,
        ios_fallback_url: APP_STORE,
      },
    );
    await setDeferredPage(h.db, app, 'live', true);
    await setDeferredPage(h.db, app, 'test', false);
    return { app, link };
  }
  const iphone = { 'user-agent': IPHONE };

  it('answers iOS with the page where the app opted in, counting the click and minting the token', async () => {
    const { app, link } = await optedInLink();
    const res = await h.get(`/${link.alias}?utm=a&b=%22`, { host: app.liveHost, headers: iphone });
    expect(res.status).toBe(200);
    expect(res.headers.get('cache-control')).toBe('no-store');
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toMatch(
      /^default-src 'none'; script-src 'sha256-[^']+'; style-src 'sha256-[^']+';/,
    );
    expect(res.headers.get('location')).toBeNull();
    expect(res.text).toContain('<title>Summer &lt;sale&gt;</title>');
    expect(res.text).toContain(`href="${APP_STORE}?utm=a&amp;b=%22">Continue without copying</a>`);
    const token = pageToken(res);
    expect(token).toMatch(TOKEN);
    expect(res.text).toContain(
      `value="https://${app.subdomainKey}.${LINK_DOMAIN}/${link.alias}?ls_click=${token}"`,
    );

    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(1);
    expect(await stored(token)).toMatchObject({ linkId: link.id });
    expect(await tokensOfApp(app.appId)).toBe(1);
  });

  it('serves the page from the cache too, and a HEAD with the same headers, counting nothing', async () => {
    const { app, link } = await optedInLink();
    const first = await h.get(`/${link.alias}`, { host: app.liveHost, headers: iphone });
    await h.cached(app, link.alias);
    const hit = await h.get(`/${link.alias}`, { host: app.liveHost, headers: iphone });
    expect(hit.status).toBe(200);
    expect(pageToken(hit)).not.toBe(pageToken(first));
    const head = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: iphone,
      method: 'HEAD',
    });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    for (const name of [
      'content-length',
      'content-type',
      'cache-control',
      'content-security-policy',
    ]) {
      expect(head.headers.get(name)).toBe(hit.headers.get(name));
    }
    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(2);
    expect(await tokensOfApp(app.appId)).toBe(2);
  });

  it('is per environment, for iOS only, and follows the setting once the cache is invalidated', async () => {
    const { app, link } = await optedInLink();
    // Test environment: iOS set, page off.
    const test = await h.get(`/${link.alias}`, { host: app.testHost, headers: iphone });
    expect(test.status).toBe(302);
    expect(test.headers.get('location')).toBe(APP_STORE);
    // Android on the live host: the web fallback as ever.
    const android = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'user-agent': ANDROID },
    });
    expect(android.headers.get('location')).toBe('https://example.com/web');

    expect((await h.get(`/${link.alias}`, { host: app.liveHost, headers: iphone })).status).toBe(
      200,
    );
    await setDeferredPage(h.db, app, 'live', false);
    await h.cache.invalidate([
      { subdomainKey: app.subdomainKey, environment: 'live', alias: link.alias },
    ]);
    const off = await h.get(`/${link.alias}`, { host: app.liveHost, headers: iphone });
    expect(off.status).toBe(302);
    expect(off.headers.get('location')).toBe(APP_STORE);
  });

  it('is not served for a link without an iOS fallback', async () => {
    const app = await createTestApp(h.db);
    await setDeferredPage(h.db, app, 'live', true);
    const link = await insertLink(h.db, app, { web_fallback_url: 'https://example.com/web' });
    const res = await h.get(`/${link.alias}`, { host: app.liveHost, headers: iphone });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('https://example.com/web');
  });
});
