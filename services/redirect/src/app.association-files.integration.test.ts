import type { Insertable } from 'kysely';
import type { Database } from '@linkservice/db';
import type { Answer } from './testing/harness';
import { createTestApp, redirectForFile } from './testing/harness';

const h = redirectForFile();

describe('app association files', () => {
  const AASA = '/.well-known/apple-app-site-association';
  const ASSET_LINKS = '/.well-known/assetlinks.json';
  const FINGERPRINT = Array.from({ length: 32 }, (_, i) =>
    i.toString(16).toUpperCase().padStart(2, '0'),
  ).join(':');
  /** The Android half of both tests' live rows. */
  const ANDROID_APP = {
    android_package_name: 'com.example.app',
    android_sha256_fingerprints: [FINGERPRINT],
  };

  /** Stores association rows as linkctl leaves them. */
  async function storeAssociations(rows: Insertable<Database['app_associations']>[]) {
    await h.db.insertInto('app_associations').values(rows).execute();
  }

  it('404s on both files while nothing is set', async () => {
    const app = await createTestApp(h.db);
    for (const path of [AASA, ASSET_LINKS]) {
      const res = await h.get(path, { host: app.liveHost });
      expect(res.status).toBe(404);
      expect(res.headers.get('cache-control')).toBe('no-store');
    }
  });

  it('serves the settings of the host environment as JSON, without a redirect', async () => {
    const app = await createTestApp(h.db);
    await storeAssociations([
      {
        app_id: app.appId,
        environment: 'live',
        ios_team_id: 'ABCDE12345',
        ios_bundle_id: 'com.example.app',
        ...ANDROID_APP,
      },
      {
        app_id: app.appId,
        environment: 'test',
        ios_team_id: 'ABCDE12345',
        ios_bundle_id: 'com.example.app.beta',
      },
    ]);

    const aasa = await h.get(AASA, { host: app.liveHost });
    expect(aasa.status).toBe(200);
    expect(aasa.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(aasa.text)).toEqual({
      applinks: {
        details: [{ appIDs: ['ABCDE12345.com.example.app'], components: [{ '/': '*' }] }],
      },
    });

    const assetLinks = await h.get(ASSET_LINKS, { host: app.liveHost });
    expect(assetLinks.status).toBe(200);
    expect(assetLinks.headers.get('content-type')).toBe('application/json');
    expect(JSON.parse(assetLinks.text)).toEqual([
      {
        relation: ['delegate_permission/common.handle_all_urls'],
        target: {
          namespace: 'android_app',
          package_name: 'com.example.app',
          sha256_cert_fingerprints: [FINGERPRINT],
        },
      },
    ]);

    const testAasa = await h.get(AASA, { host: app.testHost });
    expect(JSON.parse(testAasa.text)).toMatchObject({
      applinks: { details: [{ appIDs: ['ABCDE12345.com.example.app.beta'] }] },
    });
    // iOS only on the test host: no Android file there.
    expect((await h.get(ASSET_LINKS, { host: app.testHost })).status).toBe(404);
    // Not on hosts that are not link hosts.
    expect((await h.get(AASA, { host: `127.0.0.1:${h.port}` })).status).toBe(404);

    const head = await h.get(AASA, { host: app.liveHost, method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
  });

  it('answers a platform cleared by linkctl unset-* exactly as one never set', async () => {
    const neverSet = await createTestApp(h.db);
    const app = await createTestApp(h.db);
    // Live: iOS cleared, Android kept. Test: both cleared, the state linkctl leaves for a moment
    // before it deletes the emptied row.
    await storeAssociations([
      { app_id: app.appId, environment: 'live', ...ANDROID_APP },
      { app_id: app.appId, environment: 'test' },
    ]);
    const comparable = ({ status, headers, text }: Answer) => ({
      status,
      contentType: headers.get('content-type'),
      cacheControl: headers.get('cache-control'),
      body: text,
    });
    const cases: [string, string, string][] = [
      [AASA, app.liveHost, neverSet.liveHost],
      [AASA, app.testHost, neverSet.testHost],
      [ASSET_LINKS, app.testHost, neverSet.testHost],
    ];
    for (const [path, clearedHost, neverSetHost] of cases) {
      const cleared = await h.get(path, { host: clearedHost });
      const never = await h.get(path, { host: neverSetHost });
      expect(comparable(cleared)).toEqual(comparable(never));
      expect(cleared.status).toBe(404);
    }
    expect((await h.get(ASSET_LINKS, { host: app.liveHost })).status).toBe(200);
  });
});
