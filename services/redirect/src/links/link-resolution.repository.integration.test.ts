import type { DbHandle } from '@linkservice/db';
import type { LinkRef } from '@linkservice/link-cache';
import { createTenant, insertLink, testDatabase } from '@linkservice/testing';
import { LinkResolutionRepository } from './link-resolution.repository';

let postgres: DbHandle;

beforeAll(() => {
  postgres = testDatabase(2);
});
afterAll(async () => {
  await postgres.close();
});

const find = (ref: LinkRef) => new LinkResolutionRepository(postgres.db).find(ref);

describe('LinkResolutionRepository.find', () => {
  it('reads the link with its title, and no deferred page without association settings', async () => {
    const app = await createTenant(postgres.db);
    const expiresAt = new Date(Date.UTC(2031, 0, 1));
    const link = await insertLink(postgres.db, app, {
      title: 'Summer sale',
      web_fallback_url: 'https://example.com/web',
      ios_fallback_url: 'https://apps.apple.com/app/id1',
      expires_at: expiresAt,
    });
    const untitled = await insertLink(postgres.db, app);
    const ref = { subdomainKey: app.subdomainKey, environment: 'live' as const };

    expect(await find({ ...ref, alias: link.alias })).toEqual({
      linkId: link.id,
      webFallbackUrl: 'https://example.com/web',
      iosFallbackUrl: 'https://apps.apple.com/app/id1',
      expiresAt: expiresAt.getTime(),
      archived: false,
      title: 'Summer sale',
      iosDeferredPage: false,
    });
    expect(await find({ ...ref, alias: untitled.alias })).toMatchObject({
      title: null,
      iosDeferredPage: false,
    });
    expect(await find({ ...ref, alias: 'nope' })).toBeNull();
  });

  it("takes the deferred page from the link's own app and environment only", async () => {
    const app = await createTenant(postgres.db);
    const other = await createTenant(postgres.db);
    const live = await insertLink(postgres.db, app);
    const test = await insertLink(postgres.db, { appId: app.appId, environment: 'test' });
    const ios = { ios_team_id: 'ABCDE12345', ios_bundle_id: 'com.example.app' };
    await postgres.db
      .insertInto('app_associations')
      .values([
        { app_id: app.appId, environment: 'test', ...ios, ios_deferred_page: true },
        { app_id: app.appId, environment: 'live', ...ios, ios_deferred_page: false },
        { app_id: other.appId, environment: 'live', ...ios, ios_deferred_page: true },
      ])
      .execute();
    const resolve = (environment: 'live' | 'test', alias: string) =>
      find({ subdomainKey: app.subdomainKey, environment, alias });

    expect(await resolve('test', test.alias)).toMatchObject({ iosDeferredPage: true });
    expect(await resolve('live', live.alias)).toMatchObject({ iosDeferredPage: false });
  });
});
