import { randomBytes } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { LinkCache } from '@linkservice/link-cache';
import { testDatabase, testEnvironment } from '@linkservice/testing';
import { Redis } from 'ioredis';
import { AppsRepository } from './apps/apps.repository';
import { AppAdminService } from './apps/app-admin.service';
import { LinkHostCache } from './link-host-cache';
import { unwrap } from './result';
import { createLinkctlServices } from './deps';

// The exported services against the run's database, for what the CLI cannot show directly:
// retries on derived-key collisions, concurrent use, the stored iOS deferred-page setting, and
// the link host cache as linkctl reaches it.

const LINK_DOMAIN = 'links.localhost';
let handle: DbHandle;

beforeAll(() => {
  handle = testDatabase(8);
});

afterAll(async () => {
  await handle.close();
});

const hex = () => randomBytes(3).toString('hex');

describe('AppAdminService', () => {
  it('draws a new suffix when a derived subdomain key is taken', async () => {
    const tag = hex();
    const { apps } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    unwrap(await apps.createApp({ name: 'x', subdomainKey: `clash-${tag}-aaaaaa` }));
    unwrap(await apps.createApp({ name: 'x', subdomainKey: `clash-${tag}-bbbbbb` }));

    const suffixes = ['aaaaaa', 'bbbbbb', 'cccccc'];
    const service = new AppAdminService(new AppsRepository(handle.db), {
      linkDomain: LINK_DOMAIN,
      nextSuffix: () => suffixes.shift() ?? 'zzzzzz',
    });
    const app = unwrap(await service.createApp({ name: `Clash ${tag}` }));
    expect(app.subdomainKey).toBe(`clash-${tag}-cccccc`);
    expect(suffixes).toEqual([]);
  });

  it('gives up after the configured attempts with a value, not an exception', async () => {
    const tag = hex();
    const { apps } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    unwrap(await apps.createApp({ name: 'x', subdomainKey: `stuck-${tag}-aaaaaa` }));
    const service = new AppAdminService(new AppsRepository(handle.db), {
      linkDomain: LINK_DOMAIN,
      nextSuffix: () => 'aaaaaa',
      derivationAttempts: 3,
    });
    const result = await service.createApp({ name: `Stuck ${tag}` });
    expect(result).toEqual({
      ok: false,
      error: { code: 'subdomain_key_taken', message: expect.stringMatching(/after 3 attempts/) },
    });
  });

  it('lets exactly one of many concurrent creations take a subdomain key', async () => {
    const subdomainKey = `race-${hex()}`;
    const { apps } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) => apps.createApp({ name: `Racer ${i}`, subdomainKey })),
    );
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(results.filter((r) => !r.ok).map((r) => r.error.code)).toEqual(
      Array(7).fill('subdomain_key_taken'),
    );
  });

  it('validates input given programmatically as the CLI does', async () => {
    const { apps } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    const refused = await Promise.all([
      apps.createApp({ name: 'X', linkAllowance: -1 }),
      apps.createApp({ name: 'X', subdomainKey: 'x-test' }),
      apps.createApp({ name: '' }),
      apps.setLinkAllowance('app_nope', 3),
      apps.getApp('app_nope'),
    ]);
    expect(refused.map((r) => !r.ok && r.error.code)).toEqual([
      'invalid_link_allowance',
      'invalid_subdomain_key',
      'invalid_name',
      'app_not_found',
      'app_not_found',
    ]);
  });

  it('moves updated_at only when the allowance changes', async () => {
    const { apps } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    const app = unwrap(await apps.createApp({ name: 'Plan', linkAllowance: 10 }));
    const updatedAt = async () =>
      (
        await handle.db
          .selectFrom('apps')
          .select('updated_at')
          .where('id', '=', app.id)
          .executeTakeFirstOrThrow()
      ).updated_at.getTime();
    const before = await updatedAt();
    unwrap(await apps.setLinkAllowance(app.id, 10));
    expect(await updatedAt()).toBe(before);
    expect(unwrap(await apps.setLinkAllowance(app.id, 11)).linkAllowance).toBe(11);
    expect(await updatedAt()).toBeGreaterThanOrEqual(before);
    expect(unwrap(await apps.getApp(app.id))).toEqual({ ...app, linkAllowance: 11 });
  });
});

describe('KeyAdminService', () => {
  it('revokes once under concurrent revocations and keeps the first revokedAt', async () => {
    const { apps, keys } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    const app = unwrap(await apps.createApp({ name: 'Keys' }));
    const { key } = unwrap(await keys.createKey({ appId: app.id, environment: 'live' }));
    const results = (
      await Promise.all(Array.from({ length: 6 }, () => keys.revokeKey(key.id)))
    ).map(unwrap);
    expect(results.filter((r) => !r.alreadyRevoked)).toHaveLength(1);
    expect(new Set(results.map((r) => r.key.revokedAt)).size).toBe(1);
    expect(results[0]?.key.revokedAt).not.toBeNull();
  });

  it('makes secret keys by default and publishable keys on request, listed with their type', async () => {
    const { apps, keys } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    const app = unwrap(await apps.createApp({ name: 'Types' }));
    const plain = unwrap(await keys.createKey({ appId: app.id, environment: 'test' }));
    const publishable = unwrap(
      await keys.createKey({ appId: app.id, environment: 'test', type: 'publishable' }),
    );
    expect(plain.key.type).toBe('secret');
    expect(plain.secret).toMatch(/^ls_sk_test_/);
    expect(publishable.key.type).toBe('publishable');
    expect(publishable.secret).toMatch(/^ls_pk_test_/);
    const listed = unwrap(await keys.listKeys(app.id));
    expect(listed.map(({ id, type }) => ({ id, type }))).toEqual([
      { id: plain.key.id, type: 'secret' },
      { id: publishable.key.id, type: 'publishable' },
    ]);
    const revoked = unwrap(await keys.revokeKey(publishable.key.id));
    expect(revoked.key).toMatchObject({ id: publishable.key.id, type: 'publishable' });
  });
});

describe('AssociationAdminService: the iOS deferred page', () => {
  const IOS = { teamId: 'ABCDE12345', bundleId: 'com.example.shop' };
  const storedPage = async (appId: string) =>
    (
      await handle.db
        .selectFrom('app_associations')
        .select('ios_deferred_page')
        .where('app_id', '=', appId)
        .where('environment', '=', 'live')
        .executeTakeFirst()
    )?.ios_deferred_page;

  it('is off for a new setting and kept when not given', async () => {
    const { apps, associations } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    const app = unwrap(await apps.createApp({ name: 'Deferred' }));
    expect(unwrap(await associations.setIos(app.id, 'live', IOS)).association.ios).toMatchObject({
      deferredPage: false,
    });
    unwrap(await associations.setIos(app.id, 'live', { ...IOS, deferredPage: true }));
    const kept = unwrap(
      await associations.setIos(app.id, 'live', { ...IOS, bundleId: 'com.example.next' }),
    );
    expect(kept.association.ios).toMatchObject({
      bundleId: 'com.example.next',
      deferredPage: true,
    });
    expect(await storedPage(app.id)).toBe(true);
    unwrap(await associations.setIos(app.id, 'live', { ...IOS, deferredPage: false }));
    expect(await storedPage(app.id)).toBe(false);
  });

  it('goes with iOS on unset-ios, stays on through Android changes', async () => {
    const { apps, associations } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    const app = unwrap(await apps.createApp({ name: 'Deferred' }));
    const android = {
      packageName: 'com.example.shop',
      sha256Fingerprints: [Array.from({ length: 32 }, () => 'AB').join(':')],
    };
    unwrap(await associations.setIos(app.id, 'live', { ...IOS, deferredPage: true }));
    const withAndroid = unwrap(await associations.setAndroid(app.id, 'live', android));
    expect(withAndroid.association.ios).toMatchObject({ deferredPage: true });
    unwrap(await associations.unsetAndroid(app.id, 'live'));
    expect(await storedPage(app.id)).toBe(true);

    unwrap(await associations.setAndroid(app.id, 'live', android));
    expect(unwrap(await associations.unsetIos(app.id, 'live')).association.ios).toBeNull();
    expect(await storedPage(app.id)).toBe(false);
    expect(unwrap(await associations.setIos(app.id, 'live', IOS)).association.ios).toMatchObject({
      deferredPage: false,
    });
  });

  it('is refused by the database without iOS, whatever the caller does', async () => {
    const { apps } = createLinkctlServices(handle.db, { linkDomain: LINK_DOMAIN });
    const app = unwrap(await apps.createApp({ name: 'Deferred' }));
    await expect(
      handle.db
        .insertInto('app_associations')
        .values({
          app_id: app.id,
          environment: 'live',
          android_package_name: 'com.example.shop',
          android_sha256_fingerprints: [Array.from({ length: 32 }, () => 'AB').join(':')],
          ios_deferred_page: true,
        })
        .execute(),
    ).rejects.toThrow(/app_associations_ios_deferred_page_needs_ios/);
  });
});

describe('LinkHostCache', () => {
  const { redisUrl, redisPrefix } = testEnvironment();
  let redis: Redis;
  beforeAll(() => {
    redis = new Redis(redisUrl);
  });
  afterAll(async () => {
    await redis.quit();
  });

  it("drops the host's cached resolutions and says how many", async () => {
    const host = { subdomainKey: `lhc-${hex()}`, environment: 'live' as const };
    const cache = new LinkCache(redis, redisPrefix);
    for (const alias of ['a', 'b', 'c']) await cache.fill({ ...host, alias }, null, null);
    const linkHostCache = new LinkHostCache({ REDIS_URL: redisUrl, REDIS_PREFIX: redisPrefix });
    const generations = async () => {
      const lookup = await cache.lookup({ ...host, alias: 'a' });
      if (lookup.kind !== 'miss' || lookup.generation === null) throw new Error('expected a miss');
      // The alias' generation and the host's: Redis' time in ms when each was last set.
      expect(lookup.generation).toMatch(/^\d{13}\/\d{13}$/);
      return lookup.generation.split('/').map(Number);
    };
    try {
      expect(await linkHostCache.invalidateHost(host)).toEqual({ ok: true, dropped: 3 });
      const [alias, hostOnce] = await generations();
      expect(await linkHostCache.invalidateHost(host)).toEqual({ ok: true, dropped: 0 });
      // The alias was invalidated once, its host twice.
      expect(await generations()).toEqual([alias, expect.any(Number)]);
      expect((await generations())[1]).toBeGreaterThan(hostOnce ?? Infinity);
    } finally {
      linkHostCache.close();
    }
  });

  it('answers a refused connection with a reason, never the password', async () => {
    const linkHostCache = new LinkHostCache({
      REDIS_URL: 'redis://user:s3cret@127.0.0.1:1/0',
      REDIS_PREFIX: redisPrefix,
    });
    try {
      const outcome = await linkHostCache.invalidateHost({
        subdomainKey: 'x',
        environment: 'live',
      });
      expect(outcome).toEqual({
        ok: false,
        reason: expect.stringMatching(/^Redis at 127\.0\.0\.1:1: connect ECONNREFUSED/),
      });
      expect(JSON.stringify(outcome)).not.toContain('s3cret');
    } finally {
      linkHostCache.close();
    }
  });
});
