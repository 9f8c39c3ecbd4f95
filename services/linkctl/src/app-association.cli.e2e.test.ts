import { randomBytes } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { testDatabase } from '@linkservice/testing';
import type { LinkctlRun } from './testing/run-linkctl';
import { assertLinkctlBuilt, jsonOf, runLinkctl } from './testing/run-linkctl';

// Black-box tests of `linkctl app set-ios` / `set-android` / `unset-ios` / `unset-android` against
// the run's database.

const LINK_DOMAIN = 'links.example.test';
const FP_A = Array.from({ length: 32 }, (_, i) => (i * 7).toString(16).padStart(2, '0')).join(':');
const FP_B = Array.from({ length: 32 }, () => 'AB').join(':');

let handle: DbHandle;

beforeAll(() => {
  assertLinkctlBuilt();
  handle = testDatabase(2);
});
afterAll(async () => {
  await handle.close();
});

const linkctl = (...args: string[]) => runLinkctl(args, { LINK_DOMAIN });

async function createApp(): Promise<{ id: string; subdomainKey: string }> {
  const subdomain = `assoc-${randomBytes(4).toString('hex')}`;
  const doc = jsonOf(
    await linkctl('app', 'create', '--name', 'Assoc', '--subdomain', subdomain, '--json'),
  ) as { app: { id: string; subdomainKey: string } };
  return doc.app;
}

function associationRows(appId: string) {
  return handle.db
    .selectFrom('app_associations')
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

function expectOneLineFailure(run: LinkctlRun, exitCode: number, reason: RegExp): void {
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: exitCode, stdout: '' });
  expect(run.stderr).toMatch(/^linkctl: [^\n]+\n$/);
  expect(run.stderr).toMatch(reason);
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
      app: {
        id: app.id,
        name: 'Assoc',
        subdomainKey: app.subdomainKey,
        linkHost: `${app.subdomainKey}.${LINK_DOMAIN}`,
        linkAllowance: null,
      },
      association: {
        environment: 'live',
        linkHost: `${app.subdomainKey}.${LINK_DOMAIN}`,
        ios: {
          teamId: 'ABCDE12345',
          bundleId: 'com.example.shop',
          appId: 'ABCDE12345.com.example.shop',
        },
        android: null,
      },
    });
    expect(await associationRows(app.id)).toEqual([
      {
        environment: 'live',
        ios_team_id: 'ABCDE12345',
        ios_bundle_id: 'com.example.shop',
        android_package_name: null,
        android_sha256_fingerprints: null,
      },
    ]);
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
    const run = await linkctl(
      'app',
      'set-ios',
      app.id,
      '--team-id',
      'ABCDE12345',
      '--bundle-id',
      'com.example.x',
    );
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`link host     ${app.subdomainKey}.${LINK_DOMAIN}\n`);
    expect(run.stdout).toContain('iOS           ABCDE12345.com.example.x\n');
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
      linkHost: `${app.subdomainKey}.${LINK_DOMAIN}`,
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
  const setIos = (appId: string, ...extra: string[]) =>
    linkctl(
      'app',
      'set-ios',
      appId,
      '--team-id',
      'ABCDE12345',
      '--bundle-id',
      'com.example.shop',
      ...extra,
      '--json',
    );
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

  it('unset-ios clears only iOS, keeps Android and prints the same document as set-ios', async () => {
    const app = await createApp();
    jsonOf(await setIos(app.id));
    jsonOf(await setAndroid(app.id));
    const run = await linkctl('app', 'unset-ios', app.id, '--json');
    expect(jsonOf(run)).toEqual({
      app: {
        id: app.id,
        name: 'Assoc',
        subdomainKey: app.subdomainKey,
        linkHost: `${app.subdomainKey}.${LINK_DOMAIN}`,
        linkAllowance: null,
      },
      association: {
        environment: 'live',
        linkHost: `${app.subdomainKey}.${LINK_DOMAIN}`,
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
    expect(await associationRows(app.id)).toEqual([
      {
        environment: 'live',
        ios_team_id: 'ABCDE12345',
        ios_bundle_id: 'com.example.shop',
        android_package_name: null,
        android_sha256_fingerprints: null,
      },
    ]);
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
      linkHost: `${app.subdomainKey}.${LINK_DOMAIN}`,
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
