import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { AddressInfo, Socket } from 'node:net';
import { createServer } from 'node:net';
import type { Environment } from '@linkservice/db';
import type { LinkRef } from '@linkservice/link-cache';
import { LinkCache } from '@linkservice/link-cache';
import { testEnvironment } from '@linkservice/testing';
import { Redis } from 'ioredis';
import { REDIS_TIMEOUT_MS } from './link-host-cache';
import type { LinkctlRun } from './testing/run-linkctl';
import {
  TEST_LINK_DOMAIN as LINK_DOMAIN,
  expectOneLineFailure,
  linkctl,
  useLinkctlDatabase,
} from './testing/linkctl-suite';
import { jsonOf, linkctlInProcess } from './testing/run-linkctl';

// `linkctl app set-ios` / `set-android` / `unset-ios` / `unset-android`, run in this process as
// `linkctl <args>` would, against the run's database and Redis (set-ios and unset-ios clear the
// link host's cache).

const FP_A = Array.from({ length: 32 }, (_, i) => (i * 7).toString(16).padStart(2, '0')).join(':');
const FP_B = Array.from({ length: 32 }, () => 'AB').join(':');

const database = useLinkctlDatabase();

/** The association row of set-ios com.example.shop on the live host, Android unset. */
const LIVE_ROW_OF_SHOP_IOS_ALONE = {
  environment: 'live',
  ios_team_id: 'ABCDE12345',
  ios_bundle_id: 'com.example.shop',
  android_package_name: null,
  android_sha256_fingerprints: null,
};

async function createApp(): Promise<{ id: string; subdomainKey: string }> {
  const subdomain = `assoc-${randomBytes(4).toString('hex')}`;
  const doc = jsonOf(
    await linkctl('app', 'create', '--name', 'Assoc', '--subdomain', subdomain, '--json'),
  ) as { app: { id: string; subdomainKey: string } };
  return doc.app;
}

/** set-android of com.example.shop (fingerprint FP_B) with --json, plus `extra` options. */
const setAndroid = (appId: string, ...extra: string[]) =>
  linkctl(
    'app',
    'set-android',
    appId,
    '--package',
    'com.example.shop',
    '--sha256',
    FP_B,
    ...extra,
    '--json',
  );

/** set-ios of `bundleId` with team ABCDE12345, plus `extra` options. */
const setIosBundle = (appId: string, bundleId: string, ...extra: string[]) =>
  linkctl('app', 'set-ios', appId, '--team-id', 'ABCDE12345', '--bundle-id', bundleId, ...extra);

/** set-ios of com.example.shop with --json, plus `extra` options. */
const setIos = (appId: string, ...extra: string[]) =>
  setIosBundle(appId, 'com.example.shop', ...extra, '--json');

/** The live link host of an app made by createApp. */
const liveHostOf = (app: { subdomainKey: string }) => `${app.subdomainKey}.${LINK_DOMAIN}`;

/** The `app` part of the document the association commands print for an app from createApp. */
function printedApp(app: { id: string; subdomainKey: string }) {
  return {
    id: app.id,
    name: 'Assoc',
    subdomainKey: app.subdomainKey,
    linkHost: liveHostOf(app),
    linkAllowance: null,
  };
}

function associationRows(appId: string) {
  return database()
    .db.selectFrom('app_associations')
    .select([
      'environment',
      'ios_team_id',
      'ios_bundle_id',
      'android_package_name',
      'android_sha256_fingerprints',
    ])
    .where('app_id', '=', appId)
    .orderBy('environment')
    .execute();
}

describe('linkctl app set-ios', () => {
  it('sets the live host by default and prints the app and its association as JSON', async () => {
    const app = await createApp();
    const run = await linkctl(
      'app',
      'set-ios',
      app.id,
      '--team-id',
      'abcde12345',
      '--bundle-id',
      'com.example.shop',
      '--json',
    );
    expect(jsonOf(run)).toEqual({
      app: printedApp(app),
      association: {
        environment: 'live',
        linkHost: liveHostOf(app),
        ios: {
          teamId: 'ABCDE12345',
          bundleId: 'com.example.shop',
          appId: 'ABCDE12345.com.example.shop',
          deferredPage: false,
        },
        android: null,
      },
    });
    expect(await associationRows(app.id)).toEqual([LIVE_ROW_OF_SHOP_IOS_ALONE]);
  });

  it('keeps environments apart and replaces only the iOS pair', async () => {
    const app = await createApp();
    jsonOf(
      await linkctl(
        'app',
        'set-android',
        app.id,
        '--package',
        'com.example.beta',
        '--sha256',
        FP_B,
        '--env',
        'test',
        '--json',
      ),
    );
    const run = await linkctl(
      'app',
      'set-ios',
      app.id,
      '--team-id',
      'ZZZZZ99999',
      '--bundle-id',
      'com.example.beta',
      '--env',
      'test',
      '--json',
    );
    const doc = jsonOf(run) as { association: Record<string, unknown> };
    expect(doc.association).toMatchObject({
      environment: 'test',
      linkHost: `${app.subdomainKey}-test.${LINK_DOMAIN}`,
      ios: { appId: 'ZZZZZ99999.com.example.beta' },
      android: { packageName: 'com.example.beta', sha256Fingerprints: [FP_B] },
    });
    jsonOf(
      await linkctl(
        'app',
        'set-ios',
        app.id,
        '--team-id',
        'YYYYY88888',
        '--bundle-id',
        'com.example.beta2',
        '--env',
        'test',
        '--json',
      ),
    );
    expect(await associationRows(app.id)).toEqual([
      {
        environment: 'test',
        ios_team_id: 'YYYYY88888',
        ios_bundle_id: 'com.example.beta2',
        android_package_name: 'com.example.beta',
        android_sha256_fingerprints: [FP_B],
      },
    ]);
  });

  it('prints a readable summary without --json', async () => {
    const app = await createApp();
    const run = await setIosBundle(app.id, 'com.example.x');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`link host     ${liveHostOf(app)}\n`);
    expect(run.stdout).toContain('iOS           ABCDE12345.com.example.x\n    deferred page off\n');
    expect(run.stdout).toContain('Android       not set');
  });

  it('refuses bad formats, unknown apps and bad usage with one line each', async () => {
    const app = await createApp();
    const cases: [string[], number, RegExp][] = [
      [['--team-id', 'ABC', '--bundle-id', 'com.example.x'], 1, /invalid team id "ABC"/],
      [['--team-id', 'ABCDE1234!', '--bundle-id', 'com.example.x'], 1, /invalid team id/],
      [['--team-id', 'ABCDE12345', '--bundle-id', 'nodots'], 1, /invalid bundle id "nodots"/],
      [['--team-id', 'ABCDE12345', '--bundle-id', 'com..example'], 1, /invalid bundle id/],
      [['--team-id', 'ABCDE12345', '--bundle-id', 'com.ex ample'], 1, /invalid bundle id/],
      [['--team-id', 'ABCDE12345'], 2, /required option '--bundle-id <id>' not specified/],
      [['--team-id', 'ABCDE12345', '--bundle-id', 'com.e.x', '--env', 'prod'], 2, /--env/],
    ];
    const runs = await Promise.all(
      cases.map(([args]) => linkctl('app', 'set-ios', app.id, ...args, '--json')),
    );
    runs.forEach((run, i) => {
      expectOneLineFailure(run, cases[i][1], cases[i][2]);
    });
    const unknown = await linkctl(
      'app',
      'set-ios',
      'app_NOPE',
      '--team-id',
      'ABCDE12345',
      '--bundle-id',
      'com.e.x',
    );
    expectOneLineFailure(unknown, 1, /no app with id "app_NOPE"/);
    expect(await associationRows(app.id)).toEqual([]);
  });
});

describe('linkctl app set-android', () => {
  it('stores the package and deduplicated, upper-cased fingerprints', async () => {
    const app = await createApp();
    const run = await linkctl(
      'app',
      'set-android',
      app.id,
      '--package',
      'com.example.shop',
      '--sha256',
      FP_A,
      '--sha256',
      FP_B,
      '--sha256',
      FP_A.toUpperCase(),
      '--json',
    );
    const doc = jsonOf(run) as { association: Record<string, unknown> };
    expect(doc.association).toEqual({
      environment: 'live',
      linkHost: liveHostOf(app),
      ios: null,
      android: { packageName: 'com.example.shop', sha256Fingerprints: [FP_A.toUpperCase(), FP_B] },
    });
  });

  it('refuses bad package names and fingerprints with one line each', async () => {
    const app = await createApp();
    const short = FP_B.split(':').slice(0, 31).join(':');
    const cases: [string[], number, RegExp][] = [
      [['--package', 'shop', '--sha256', FP_B], 1, /invalid package name "shop"/],
      [['--package', 'com.1shop', '--sha256', FP_B], 1, /invalid package name/],
      [['--package', 'com.example-shop', '--sha256', FP_B], 1, /invalid package name/],
      [['--package', 'com.example', '--sha256', short], 1, /invalid SHA-256 fingerprint/],
      [['--package', 'com.example', '--sha256', FP_B.replace(/:/g, '')], 1, /invalid SHA-256/],
      [['--package', 'com.example', '--sha256', FP_B.replace('AB', 'GG')], 1, /invalid SHA-256/],
      [['--package', 'com.example'], 2, /required option '--sha256 <fingerprint>' not specified/],
    ];
    const runs = await Promise.all(
      cases.map(([args]) => linkctl('app', 'set-android', app.id, ...args, '--json')),
    );
    runs.forEach((run, i) => {
      expectOneLineFailure(run, cases[i][1], cases[i][2]);
    });
    expect(await associationRows(app.id)).toEqual([]);
  });
});

describe('linkctl app unset-ios / unset-android', () => {
  it('unset-ios clears only iOS, keeps Android and prints the same document as set-ios', async () => {
    const app = await createApp();
    jsonOf(await setIos(app.id));
    jsonOf(await setAndroid(app.id));
    const run = await linkctl('app', 'unset-ios', app.id, '--json');
    expect(jsonOf(run)).toEqual({
      app: printedApp(app),
      association: {
        environment: 'live',
        linkHost: liveHostOf(app),
        ios: null,
        android: { packageName: 'com.example.shop', sha256Fingerprints: [FP_B] },
      },
    });
    expect(await associationRows(app.id)).toEqual([
      {
        environment: 'live',
        ios_team_id: null,
        ios_bundle_id: null,
        android_package_name: 'com.example.shop',
        android_sha256_fingerprints: [FP_B],
      },
    ]);
  });

  it('unset-android clears only Android and keeps iOS', async () => {
    const app = await createApp();
    jsonOf(await setIos(app.id));
    jsonOf(await setAndroid(app.id));
    const doc = jsonOf(await linkctl('app', 'unset-android', app.id, '--json')) as {
      association: Record<string, unknown>;
    };
    expect(doc.association).toMatchObject({
      ios: { appId: 'ABCDE12345.com.example.shop' },
      android: null,
    });
    expect(await associationRows(app.id)).toEqual([LIVE_ROW_OF_SHOP_IOS_ALONE]);
  });

  it('removes the row once neither platform is set, leaving the app as if never set', async () => {
    const app = await createApp();
    jsonOf(await setIos(app.id));
    jsonOf(await setAndroid(app.id));
    jsonOf(await linkctl('app', 'unset-android', app.id, '--json'));
    const doc = jsonOf(await linkctl('app', 'unset-ios', app.id, '--json')) as {
      association: Record<string, unknown>;
    };
    expect(doc.association).toMatchObject({ ios: null, android: null });
    expect(await associationRows(app.id)).toEqual([]);
  });

  it('is idempotent: unsetting what is not set succeeds and prints the association as it stands', async () => {
    const app = await createApp();
    const nothingSet = {
      environment: 'live',
      linkHost: liveHostOf(app),
      ios: null,
      android: null,
    };
    for (const command of ['unset-ios', 'unset-android', 'unset-ios']) {
      const doc = jsonOf(await linkctl('app', command, app.id, '--json')) as {
        association: unknown;
      };
      expect(doc.association).toEqual(nothingSet);
    }
    expect(await associationRows(app.id)).toEqual([]);

    jsonOf(await setAndroid(app.id));
    const again = jsonOf(await linkctl('app', 'unset-ios', app.id, '--json')) as {
      association: unknown;
    };
    expect(again.association).toEqual({
      ...nothingSet,
      android: { packageName: 'com.example.shop', sha256Fingerprints: [FP_B] },
    });

    const text = await linkctl('app', 'unset-android', app.id);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain('iOS           not set\n');
    expect(text.stdout).toContain('Android       not set');
  });

  it('--env test unsets the test host only', async () => {
    const app = await createApp();
    jsonOf(await setIos(app.id));
    jsonOf(await setIos(app.id, '--env', 'test'));
    const doc = jsonOf(await linkctl('app', 'unset-ios', app.id, '--env', 'test', '--json')) as {
      association: unknown;
    };
    expect(doc.association).toEqual({
      environment: 'test',
      linkHost: `${app.subdomainKey}-test.${LINK_DOMAIN}`,
      ios: null,
      android: null,
    });
    expect(await associationRows(app.id)).toEqual([
      expect.objectContaining({ environment: 'live', ios_team_id: 'ABCDE12345' }),
    ]);
  });

  it('refuses unknown apps like the set commands, and bad usage', async () => {
    const [setRun, ...unsetRuns] = await Promise.all([
      linkctl('app', 'set-ios', 'app_NOPE', '--team-id', 'ABCDE12345', '--bundle-id', 'com.e.x'),
      linkctl('app', 'unset-ios', 'app_NOPE', '--json'),
      linkctl('app', 'unset-android', 'app_NOPE', '--env', 'test'),
    ]);
    for (const run of unsetRuns) {
      expectOneLineFailure(run, setRun.code ?? -1, /no app with id "app_NOPE"/);
      expect(run.stderr).toBe(setRun.stderr);
    }
    const app = await createApp();
    const usage = await Promise.all([
      linkctl('app', 'unset-ios', app.id, '--env', 'prod'),
      linkctl('app', 'unset-android'),
    ]);
    expectOneLineFailure(usage[0], 2, /--env/);
    expectOneLineFailure(usage[1], 2, /missing required argument 'appId'/);
  });
});

function deferredPageOf(appId: string, environment: Environment) {
  return database()
    .db.selectFrom('app_associations')
    .select('ios_deferred_page')
    .where('app_id', '=', appId)
    .where('environment', '=', environment)
    .executeTakeFirst()
    .then((row) => row?.ios_deferred_page);
}

function iosOf(run: LinkctlRun): unknown {
  return (jsonOf(run) as { association: { ios: unknown } }).association.ios;
}

describe('linkctl app set-ios --deferred-page', () => {
  it('turns the page on and off, and keeps it as it is when omitted', async () => {
    const app = await createApp();
    expect(iosOf(await setIos(app.id))).toMatchObject({ deferredPage: false });
    expect(await deferredPageOf(app.id, 'live')).toBe(false);

    expect(iosOf(await setIos(app.id, '--deferred-page', 'on'))).toEqual({
      teamId: 'ABCDE12345',
      bundleId: 'com.example.shop',
      appId: 'ABCDE12345.com.example.shop',
      deferredPage: true,
    });
    expect(await deferredPageOf(app.id, 'live')).toBe(true);

    // Changing the bundle without the option keeps the page on.
    const kept = await linkctl(
      'app',
      'set-ios',
      app.id,
      '--team-id',
      'ABCDE12345',
      '--bundle-id',
      'com.example.other',
      '--json',
    );
    expect(iosOf(kept)).toMatchObject({ bundleId: 'com.example.other', deferredPage: true });
    expect(await deferredPageOf(app.id, 'live')).toBe(true);

    expect(iosOf(await setIos(app.id, '--deferred-page', 'off'))).toMatchObject({
      deferredPage: false,
    });
    expect(await deferredPageOf(app.id, 'live')).toBe(false);
  });

  it('can start on, per environment', async () => {
    const app = await createApp();
    expect(iosOf(await setIos(app.id, '--env', 'test', '--deferred-page', 'on'))).toMatchObject({
      deferredPage: true,
    });
    expect(iosOf(await setIos(app.id))).toMatchObject({ deferredPage: false });
    expect(await deferredPageOf(app.id, 'test')).toBe(true);
    expect(await deferredPageOf(app.id, 'live')).toBe(false);
  });

  it('is turned off by unset-ios, so iOS set again starts off', async () => {
    const app = await createApp();
    jsonOf(await setAndroid(app.id));
    jsonOf(await setIos(app.id, '--deferred-page', 'on'));
    jsonOf(await linkctl('app', 'unset-ios', app.id, '--json'));
    // The row stays for Android; the page went with iOS (the table's check requires it).
    expect(await deferredPageOf(app.id, 'live')).toBe(false);
    expect(iosOf(await setIos(app.id))).toMatchObject({ deferredPage: false });
  });

  it('shows the setting in the human summary', async () => {
    const app = await createApp();
    const run = await setIosBundle(app.id, 'com.example.x', '--deferred-page', 'on');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain('iOS           ABCDE12345.com.example.x\n    deferred page on\n');
  });

  it('refuses a value other than on or off with one line, changing nothing', async () => {
    const app = await createApp();
    jsonOf(await setIos(app.id, '--deferred-page', 'on'));
    const runs = await Promise.all(
      ['yes', 'true', 'ON', ''].map((value) => setIos(app.id, '--deferred-page', value)),
    );
    for (const run of runs) {
      expectOneLineFailure(run, 2, /option '--deferred-page <state>' argument .* is invalid/);
    }
    expectOneLineFailure(
      await linkctl('app', 'set-ios', app.id, '--team-id', 'ABCDE12345', '--deferred-page'),
      2,
      /--deferred-page <state>' argument missing/,
    );
    expect(await deferredPageOf(app.id, 'live')).toBe(true);
  });
});

describe('set-ios and unset-ios clear the link host cache', () => {
  const { redisUrl, redisPrefix } = testEnvironment();
  let redis: Redis;
  let cache: LinkCache;
  beforeAll(() => {
    redis = new Redis(redisUrl);
    // Negative entries ("no such alias") stand for any cached resolution: invalidation is per
    // key, whatever the entry holds. They outlive the test.
    cache = new LinkCache(redis, redisPrefix, { positiveSeconds: 300, negativeSeconds: 300 });
  });
  afterAll(async () => {
    await redis.quit();
  });

  /** Cached resolutions of two aliases on each of the app's hosts. */
  async function cacheBothHosts(subdomainKey: string): Promise<Record<Environment, LinkRef[]>> {
    const refs = {
      live: ['a', 'b'].map((alias) => ({ subdomainKey, environment: 'live' as const, alias })),
      test: ['a', 'b'].map((alias) => ({ subdomainKey, environment: 'test' as const, alias })),
    };
    for (const ref of [...refs.live, ...refs.test]) {
      // As the link host fills: with the generation its lookup saw.
      const lookup = await cache.lookup(ref);
      if (lookup.kind === 'miss') await cache.fill(ref, lookup.generation, null);
    }
    return refs;
  }

  const cached = async (refs: LinkRef[]) =>
    Promise.all(refs.map(async (ref) => (await cache.lookup(ref)).kind === 'hit'));

  it("drops the cached resolutions of the command's host only", async () => {
    const app = await createApp();
    const refs = await cacheBothHosts(app.subdomainKey);
    expect(await cached([...refs.live, ...refs.test])).toEqual([true, true, true, true]);

    jsonOf(await setIos(app.id, '--deferred-page', 'on'));
    expect(await cached(refs.live)).toEqual([false, false]);
    expect(await cached(refs.test)).toEqual([true, true]);

    await cacheBothHosts(app.subdomainKey);
    jsonOf(await linkctl('app', 'unset-ios', app.id, '--env', 'test', '--json'));
    expect(await cached(refs.live)).toEqual([true, true]);
    expect(await cached(refs.test)).toEqual([false, false]);
  });

  it('leaves the cache alone on set-android and unset-android (their files are never cached)', async () => {
    const app = await createApp();
    const refs = await cacheBothHosts(app.subdomainKey);
    jsonOf(await setAndroid(app.id));
    jsonOf(await linkctl('app', 'unset-android', app.id, '--json'));
    expect(await cached(refs.live)).toEqual([true, true]);
  });

  it('clears nothing when the command is refused', async () => {
    const app = await createApp();
    const refs = await cacheBothHosts(app.subdomainKey);
    const run = await linkctl('app', 'set-ios', app.id, '--team-id', 'ABC', '--bundle-id', 'a.b');
    expectOneLineFailure(run, 1, /invalid team id/);
    expect(await cached(refs.live)).toEqual([true, true]);
  });

  /** A warning line, then nothing: stdout still holds exactly the one JSON document. */
  function expectCommittedWithWarning(run: LinkctlRun, linkHost: string): void {
    expect(run.code).toBe(0);
    expect(() => JSON.parse(run.stdout) as unknown).not.toThrow();
    expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toMatch(/^linkctl: warning: [^\n]+\n$/);
    expect(run.stderr).toContain(
      `${linkHost} may serve the previous deferred-page setting for up to LINK_CACHE_TTL_SECONDS`,
    );
  }

  it('succeeds with a warning on stderr when Redis refuses the connection', async () => {
    const app = await createApp();
    const linkHost = liveHostOf(app);
    const unreachable = { LINK_DOMAIN, REDIS_URL: 'redis://:hunter2@127.0.0.1:1' };
    const set = await linkctlInProcess(
      [
        ...['app', 'set-ios', app.id, '--team-id', 'ABCDE12345', '--bundle-id', 'com.e.x'],
        ...['--deferred-page', 'on', '--json'],
      ],
      unreachable,
    );
    expectCommittedWithWarning(set, linkHost);
    expect(set.stderr).toContain('Redis at 127.0.0.1:1: connect ECONNREFUSED');
    expect(set.stderr).not.toContain('hunter2');
    expect(JSON.parse(set.stdout)).toMatchObject({ association: { ios: { deferredPage: true } } });
    expect(await deferredPageOf(app.id, 'live')).toBe(true);

    const unset = await linkctlInProcess(['app', 'unset-ios', app.id], unreachable);
    expect(unset.code).toBe(0);
    expect(unset.stdout).toContain('iOS           not set\n');
    expect(unset.stderr).toMatch(/^linkctl: warning: the link host's cache was not cleared/);
    expect(await deferredPageOf(app.id, 'live')).toBeUndefined();
  });

  it('gives up on a Redis that accepts and never answers within seconds', async () => {
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket)).listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const app = await createApp();
      const started = Date.now();
      const run = await linkctlInProcess(
        ['app', 'set-ios', app.id, '--team-id', 'ABCDE12345', '--bundle-id', 'com.e.x', '--json'],
        {
          LINK_DOMAIN,
          REDIS_URL: `redis://127.0.0.1:${(silent.address() as AddressInfo).port}`,
        },
      );
      // One connect deadline, not a retried connect or a command left waiting on the socket.
      expect(Date.now() - started).toBeLessThan(3 * REDIS_TIMEOUT_MS);
      expectCommittedWithWarning(run, liveHostOf(app));
      expect(run.stderr).toContain(`no answer within ${REDIS_TIMEOUT_MS} ms`);
      expect(await deferredPageOf(app.id, 'live')).toBe(false);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });
});
