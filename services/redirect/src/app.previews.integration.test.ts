import { insertLink } from '@linkservice/testing';
import {
  FACEBOOK,
  LINK_DOMAIN,
  clickCount,
  clickTokensOfApp,
  createTestApp,
  redirectForFile,
  setDeferredPage,
} from './testing/harness';

/**
 * Link previews (app-interface.md): what a crawler or unfurler gets for a link, through the real
 * service on real Postgres and Redis.
 */

const SLACK = 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)';
const PLAY = 'https://play.google.com/store/apps/details?id=com.example.app';
const APP_STORE = 'https://apps.apple.com/app/id42';

const h = redirectForFile();

const tokensOfApp = (appId: string) => clickTokensOfApp(h, appId);

describe('link previews', () => {
  it('gives previewers a page with the title and the link URL, counting and minting nothing', async () => {
    const app = await createTestApp(h.db);
    await setDeferredPage(h.db, app, 'live', true);
    const link = await insertLink(h.db, app, {
      title: `"Summer" <sale> & more`,
      web_fallback_url: PLAY,
      ios_fallback_url: APP_STORE,
    });
    const linkUrl = `https://${app.subdomainKey}.${LINK_DOMAIN}/${link.alias}`;
    for (const ua of [FACEBOOK, SLACK]) {
      const res = await h.get(`/${link.alias}?utm=x`, {
        host: app.liveHost,
        headers: { 'user-agent': ua },
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('content-security-policy')).toMatch(/^default-src 'none'/);
      expect(res.text).toContain(
        '<meta property="og:title" content="&quot;Summer&quot; &lt;sale&gt; &amp; more">',
      );
      expect(res.text).toContain(`<meta property="og:url" content="${linkUrl}">`);
      expect(res.text).toContain(`<link rel="canonical" href="${linkUrl}">`);
      expect(res.text).toContain('<title>&quot;Summer&quot; &lt;sale&gt; &amp; more</title>');
      expect(res.text).not.toContain('ls_click');
    }
    // From the cache as well: the lookup itself must not count.
    await h.cached(app, link.alias);
    const cached = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'user-agent': FACEBOOK },
    });
    expect(cached.status).toBe(200);
    const head = await h.get(`/${link.alias}`, {
      host: app.liveHost,
      headers: { 'user-agent': FACEBOOK },
      method: 'HEAD',
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(cached.headers.get('content-length'));

    await h.resources.flusher.flush();
    expect(await clickCount(h.db, link.id)).toBe(0);
    expect(await tokensOfApp(app.appId)).toBe(0);
  });

  it('titles an untitled link with its alias, previews archived links, and answers 410 and 404 as for people', async () => {
    const app = await createTestApp(h.db);
    const untitled = await insertLink(h.db, app);
    const archived = await insertLink(h.db, app, { title: 'Old', archived_at: new Date() });
    const expired = await insertLink(h.db, app, { expires_at: new Date(Date.now() - 1000) });
    const as = { host: app.liveHost, headers: { 'user-agent': FACEBOOK } };

    const plain = await h.get(`/${untitled.alias}`, as);
    expect(plain.status).toBe(200);
    expect(plain.text).toContain(`<meta property="og:title" content="${untitled.alias}">`);
    const emptyTitle = await insertLink(h.db, app, { title: '' });
    const empty = await h.get(`/${emptyTitle.alias}`, as);
    expect(empty.text).toContain(`<meta property="og:title" content="${emptyTitle.alias}">`);
    const old = await h.get(`/${archived.alias}`, as);
    expect(old.status).toBe(200);
    expect(old.text).toContain('<meta property="og:title" content="Old">');
    const gone = await h.get(`/${expired.alias}`, as);
    expect(gone.status).toBe(410);
    expect(gone.text).toContain('Link expired');
    const missing = await h.get('/nope', as);
    expect(missing.status).toBe(404);
    expect(missing.text).toContain('Link not found');

    await h.resources.flusher.flush();
    expect(await clickCount(h.db, untitled.id)).toBe(0);
    expect(await clickCount(h.db, archived.id)).toBe(0);
    expect(await tokensOfApp(app.appId)).toBe(0);
  });
});
