import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { createDb } from '@linkservice/db';
import { hashSecretKey } from '@linkservice/keys';
import { freePort, testEnvironment } from '@linkservice/testing';
import { sql } from 'kysely';
import {
  TEST_LINK_DOMAIN as LINK_DOMAIN,
  expectOneLineFailure,
  linkctl,
  useLinkctlDatabase,
} from './testing/linkctl-suite';
import { jsonOf, linkctlInProcess } from './testing/run-linkctl';

// The commands run in this process against the run's database (global-setup migrated it), as
// `linkctl <args>` would: output, exit code, stored rows. linkctl.process.e2e.test.ts runs the
// compiled CLI for what only a process shows.

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const database = useLinkctlDatabase();

type FailureCase = [args: string[], exitCode: number, reason: RegExp];

/** Runs the cases side by side  and checks each one's single line. */
async function expectFailures(prefix: string[], cases: FailureCase[]): Promise<void> {
  const runs = await Promise.all(cases.map(([args]) => linkctl(...prefix, ...args, '--json')));
  runs.forEach((run, i) => {
    const [args, exitCode, reason] = cases[i];
    try {
      expectOneLineFailure(run, exitCode, reason);
    } catch (error) {
      throw new Error(`linkctl ${[...prefix, ...args].join(' ')}: ${String(error)}`);
    }
  });
}

async function storedAllowance(appId: string): Promise<number | null> {
  const row = await database()
    .db.selectFrom('apps')
    .select('link_allowance')
    .where('id', '=', appId)
    .executeTakeFirstOrThrow();
  return row.link_allowance;
}

function uniqueKey(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

interface AppJson {
  app: {
    id: string;
    name: string;
    subdomainKey: string;
    linkHost: string;
    linkAllowance: number | null;
  };
}

async function createApp(...extra: string[]): Promise<AppJson['app']> {
  return (jsonOf(await linkctl('app', 'create', '--json', ...extra)) as AppJson).app;
}

/** `type` omitted: the command's default (secret), as an operator who does not say runs it. */
async function createKey(appId: string, env: 'live' | 'test', type?: 'secret' | 'publishable') {
  const typeArgs = type === undefined ? [] : ['--type', type];
  const doc = jsonOf(
    await linkctl('key', 'create', '--app', appId, '--env', env, ...typeArgs, '--json'),
  );
  return doc as {
    key: { id: string; appId: string; environment: string; type: string; createdAt: string };
    secret: string;
  };
}

describe('linkctl app create', () => {
  it('prints exactly one JSON document with the documented fields', async () => {
    const run = await linkctl('app', 'create', '--name', '  My Shop  ', '--json');
    expect(run.stdout.endsWith('\n')).toBe(true);
    expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
    const { app } = jsonOf(run) as AppJson;

    expect(Object.keys(app).sort()).toEqual(
      ['id', 'linkAllowance', 'linkHost', 'name', 'subdomainKey'].sort(),
    );
    expect(app.id).toMatch(/^app_[0-9A-Z]{26}$/);
    expect(app.name).toBe('My Shop');
    expect(app.subdomainKey).toMatch(/^my-shop-[a-z0-9]{6}$/);
    expect(app.linkHost).toBe(`${app.subdomainKey}.${LINK_DOMAIN}`);
    expect(app.linkAllowance).toBeNull();

    const row = await database()
      .db.selectFrom('apps')
      .selectAll()
      .where('id', '=', app.id)
      .executeTakeFirstOrThrow();
    expect(row).toMatchObject({
      name: 'My Shop',
      subdomain_key: app.subdomainKey,
      link_allowance: null,
      live_link_count: 0,
      test_link_count: 0,
    });
  });

  it('prints a readable summary without --json', async () => {
    const subdomain = uniqueKey('human');
    const run = await linkctl('app', 'create', '--name', 'Human', '--subdomain', subdomain);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(() => JSON.parse(run.stdout) as unknown).toThrow();
    expect(run.stdout).toMatch(/^Created app app_[0-9A-Z]{26}\n/);
    expect(run.stdout).toContain(`subdomain key   ${subdomain}\n`);
    expect(run.stdout).toContain(`link host       ${subdomain}.${LINK_DOMAIN}\n`);
    expect(run.stdout).toContain('link allowance  unlimited\n');
  });

  it('keeps an explicit subdomain key and link allowance', async () => {
    const subdomain = uniqueKey('shop');
    const app = await createApp(
      '--name',
      'Shop',
      '--subdomain',
      subdomain,
      '--link-allowance',
      '25',
    );
    expect(app).toMatchObject({
      subdomainKey: subdomain,
      linkHost: `${subdomain}.${LINK_DOMAIN}`,
      linkAllowance: 25,
    });
    const row = await database()
      .db.selectFrom('apps')
      .select(['subdomain_key', 'link_allowance'])
      .where('id', '=', app.id)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ subdomain_key: subdomain, link_allowance: 25 });
  });

  it('takes --link-allowance none as unlimited, like set-allowance', async () => {
    const app = await createApp('--name', 'Open', '--link-allowance', 'none');
    expect(app.linkAllowance).toBeNull();
    expect(await storedAllowance(app.id)).toBeNull();

    const human = await linkctl('app', 'create', '--name', 'Open', '--link-allowance', 'none');
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toContain('link allowance  unlimited\n');
  });

  it('accepts --json before the command too, and a zero allowance', async () => {
    const run = await linkctl('--json', 'app', 'create', '--name', 'Zero', '--link-allowance', '0');
    expect((jsonOf(run) as AppJson).app.linkAllowance).toBe(0);
  });

  it('refuses a subdomain key that another app holds', async () => {
    const subdomain = uniqueKey('taken');
    await createApp('--name', 'First', '--subdomain', subdomain);
    const run = await linkctl(
      'app',
      'create',
      '--name',
      'Second',
      '--subdomain',
      subdomain,
      '--json',
    );
    expectOneLineFailure(run, 1, new RegExp(`subdomain key "${subdomain}" is already taken`));
    const holders = await database()
      .db.selectFrom('apps')
      .select('name')
      .where('subdomain_key', '=', subdomain)
      .execute();
    expect(holders).toEqual([{ name: 'First' }]);
  });

  it('refuses bad subdomain keys, names and allowances with one line each', async () => {
    await expectFailures(
      ['app', 'create'],
      [
        [['--name', 'X', '--subdomain', 'ab'], 1, /invalid subdomain key "ab": .*3-63 characters/],
        [['--name', 'X', '--subdomain', 'a'.repeat(64)], 1, /3-63 characters/],
        [['--name', 'X', '--subdomain', 'Upper'], 1, /lowercase/],
        [['--name', 'X', '--subdomain', 'under_score'], 1, /lowercase/],
        [['--name', 'X', '--subdomain', '-leading'], 1, /start and end/],
        [['--name', 'X', '--subdomain', 'trailing-'], 1, /start and end/],
        [['--name', 'X', '--subdomain', 'shop-test'], 1, /must not end in -test/],
        [['--name', '   '], 1, /invalid app name: must not be empty/],
        [['--name', 'x'.repeat(101)], 1, /at most 100 characters/],
        [['--name', 'line\nbreak'], 1, /control characters/],
        [
          ['--name', 'X', '--link-allowance', 'abc'],
          2,
          /'--link-allowance <n>' argument 'abc' is invalid/,
        ],
        [['--name', 'X', '--link-allowance', '-1'], 2, /argument '-1' is invalid/],
        [['--name', 'X', '--link-allowance', '1.5'], 2, /argument '1.5' is invalid/],
        [['--name', 'X', '--link-allowance', '2147483648'], 2, /largest allowance is 2147483647/],
        [[], 2, /required option '--name <name>' not specified/],
        [['--name', 'X', '--colour', 'red'], 2, /unknown option '--colour'/],
        [['--name', 'X', 'extra'], 2, /too many arguments/],
      ],
    );
  });
});

describe('linkctl app set-allowance', () => {
  it('sets a number and then none (unlimited), in both output modes', async () => {
    const app = await createApp('--name', 'Plan');
    const set = jsonOf(await linkctl('app', 'set-allowance', app.id, '500', '--json'));
    expect(set).toEqual({ app: { ...app, linkAllowance: 500 } });

    const human = await linkctl('app', 'set-allowance', app.id, 'none');
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toMatch(new RegExp(`^Updated app ${app.id}\n`));
    expect(human.stdout).toContain('link allowance  unlimited');

    expect(await storedAllowance(app.id)).toBeNull();
  });

  it('refuses an unknown app', async () => {
    const run = await linkctl(
      'app',
      'set-allowance',
      'app_01NOSUCHAPP0000000000000000',
      '5',
      '--json',
    );
    expectOneLineFailure(run, 1, /no app with id "app_01NOSUCHAPP0000000000000000"/);
  });

  it('refuses bad allowance arguments', async () => {
    const app = await createApp('--name', 'Plan');
    await expectFailures(
      ['app', 'set-allowance', app.id],
      [
        [['five'], 2, /command-argument value 'five' is invalid for argument 'n\|none'/],
        [['-5'], 2, /value '-5' is invalid/],
        [['2147483648'], 2, /largest allowance is 2147483647/],
        [[], 2, /missing required argument 'n\|none'/],
        [['5', '6'], 2, /too many arguments/],
      ],
    );
  });
});

describe('linkctl key create', () => {
  it.each([
    ['live', undefined, 'ls_sk_live_'],
    ['test', undefined, 'ls_sk_test_'],
    ['live', 'publishable', 'ls_pk_live_'],
    ['test', 'publishable', 'ls_pk_test_'],
  ] as const)(
    'creates a %s key of type %s (secret when not given), prints its text once and stores only its SHA-256 hash',
    async (env, type, prefix) => {
      const app = await createApp('--name', 'Keys');
      const created = await createKey(app.id, env, type);

      expect(Object.keys(created).sort()).toEqual(['key', 'secret']);
      expect(Object.keys(created.key)).toEqual(['id', 'appId', 'environment', 'type', 'createdAt']);
      expect(created.key).toMatchObject({
        appId: app.id,
        environment: env,
        type: type ?? 'secret',
      });
      expect(created.key.id).toMatch(/^key_[0-9A-Z]{26}$/);
      expect(created.key.createdAt).toMatch(TIMESTAMP);
      expect(created.secret).toMatch(new RegExp(`^${prefix}[0-9A-Za-z]{32,}$`));

      const row = await database()
        .db.selectFrom('api_keys')
        .selectAll()
        .where('id', '=', created.key.id)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({
        app_id: app.id,
        environment: env,
        type: type ?? 'secret',
        revoked_at: null,
      });
      expect(row.key_hash.equals(hashSecretKey(created.secret))).toBe(true);
      expect(row.created_at.toISOString()).toBe(created.key.createdAt);

      // Neither the key's text nor its random part is stored anywhere, in any table.
      const randomPart = created.secret.slice(prefix.length);
      for (const table of ['apps', 'api_keys', 'links', 'creation_requests']) {
        const found = await sql<{ count: number }>`
          SELECT count(*)::int AS count FROM ${sql.table(table)} t
          WHERE t::text LIKE ${`%${randomPart}%`}`.execute(database().db);
        expect({ table, count: found.rows[0]?.count }).toEqual({ table, count: 0 });
      }
    },
  );

  it('makes a secret key with --type secret, as without --type', async () => {
    const app = await createApp('--name', 'Keys');
    const created = await createKey(app.id, 'live', 'secret');
    expect(created.key.type).toBe('secret');
    expect(created.secret).toMatch(/^ls_sk_live_[0-9A-Za-z]{32,}$/);
  });

  it('prints the key and its type in the readable summary', async () => {
    const app = await createApp('--name', 'Keys');
    const run = await linkctl('key', 'create', '--app', app.id, '--env', 'live');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(
      new RegExp(`^Created live secret key key_[0-9A-Z]{26} for app ${app.id} at \\S+\n`),
    );
    expect(run.stdout).toMatch(
      /\nSecret key, shown only this once[^\n]*\n {2}ls_sk_live_[0-9A-Za-z]{32,}\n$/,
    );

    const publishable = await linkctl(
      'key',
      'create',
      '--app',
      app.id,
      '--env',
      'test',
      '--type',
      'publishable',
    );
    expect(publishable).toMatchObject({ code: 0, stderr: '' });
    expect(publishable.stdout).toMatch(
      new RegExp(`^Created test publishable key key_[0-9A-Z]{26} for app ${app.id} at \\S+\n`),
    );
    expect(publishable.stdout).toMatch(
      /\nPublishable key, shown only this once[^\n]*\n {2}ls_pk_test_[0-9A-Za-z]{32,}\n$/,
    );
  });

  it('refuses an unknown app and stores nothing', async () => {
    const run = await linkctl('key', 'create', '--app', 'app_nope', '--env', 'live', '--json');
    expectOneLineFailure(run, 1, /no app with id "app_nope"/);
    const stored = await database()
      .db.selectFrom('api_keys')
      .select('id')
      .where('app_id', '=', 'app_nope')
      .execute();
    expect(stored).toEqual([]);
  });

  it('refuses bad environments and a missing app', async () => {
    const app = await createApp('--name', 'Keys');
    await expectFailures(
      ['key', 'create'],
      [
        [
          ['--app', app.id, '--env', 'prod'],
          2,
          /'--env <environment>' argument 'prod' is invalid. Allowed choices are live, test/,
        ],
        [['--app', app.id], 2, /required option '--env <environment>' not specified/],
        [
          ['--app', app.id, '--env', 'live', '--type', 'admin'],
          2,
          /'--type <type>' argument 'admin' is invalid. Allowed choices are secret, publishable/,
        ],
        [['--env', 'live'], 2, /required option '--app <appId>' not specified/],
      ],
    );
  });
});

describe('linkctl key revoke and key list', () => {
  it('lists keys oldest first without secrets, revokes idempotently', async () => {
    const app = await createApp('--name', 'Rotation');
    const first = await createKey(app.id, 'live');
    const second = await createKey(app.id, 'test');
    const third = await createKey(app.id, 'live', 'publishable');

    const revoked = jsonOf(await linkctl('key', 'revoke', second.key.id, '--json')) as {
      key: { revokedAt: string };
    };
    expect(revoked).toEqual({
      key: { ...second.key, revokedAt: expect.stringMatching(TIMESTAMP) },
    });

    // Revoking again succeeds and keeps the first revocation time.
    const again = jsonOf(await linkctl('key', 'revoke', second.key.id, '--json'));
    expect(again).toEqual(revoked);
    const human = await linkctl('key', 'revoke', second.key.id);
    expect(human).toMatchObject({ code: 0, stderr: '' });
    expect(human.stdout).toBe(
      `Key ${second.key.id} (test secret, app ${app.id}) was already revoked at ${revoked.key.revokedAt}\n`,
    );
    const revokedPublishable = await linkctl('key', 'revoke', third.key.id);
    expect(revokedPublishable).toMatchObject({ code: 0, stderr: '' });
    expect(revokedPublishable.stdout).toMatch(
      new RegExp(`^Revoked key ${third.key.id} \\(live publishable, app ${app.id}\\) at \\S+\n$`),
    );
    const thirdRevokedAt = (
      jsonOf(await linkctl('key', 'revoke', third.key.id, '--json')) as {
        key: { type: string; revokedAt: string };
      }
    ).key;
    expect(thirdRevokedAt.type).toBe('publishable');

    const listRun = await linkctl('key', 'list', '--app', app.id, '--json');
    const listed = jsonOf(listRun);
    expect(listed).toEqual({
      keys: [
        { ...first.key, revokedAt: null },
        { ...second.key, revokedAt: revoked.key.revokedAt },
        { ...third.key, revokedAt: thirdRevokedAt.revokedAt },
      ],
    });
    for (const secret of [first.secret, second.secret, third.secret]) {
      expect(listRun.stdout).not.toContain(secret.slice(11));
    }

    const row = await database()
      .db.selectFrom('api_keys')
      .select('revoked_at')
      .where('id', '=', second.key.id)
      .executeTakeFirstOrThrow();
    expect(row.revoked_at?.toISOString()).toBe(revoked.key.revokedAt);

    const table = await linkctl('key', 'list', '--app', app.id);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout.split('\n')).toEqual([
      `3 keys of app ${app.id}:`,
      `  ${first.key.id}  live  secret       created ${first.key.createdAt}  active`,
      `  ${second.key.id}  test  secret       created ${second.key.createdAt}  revoked ${revoked.key.revokedAt}`,
      `  ${third.key.id}  live  publishable  created ${third.key.createdAt}  revoked ${thirdRevokedAt.revokedAt}`,
      '',
    ]);
  });

  it('lists an app without keys as an empty list', async () => {
    const app = await createApp('--name', 'Empty');
    expect(jsonOf(await linkctl('key', 'list', '--app', app.id, '--json'))).toEqual({ keys: [] });
  });

  it('never lists the keys of another app', async () => {
    const mine = await createApp('--name', 'Mine');
    const other = await createApp('--name', 'Other');
    const key = await createKey(other.id, 'live');
    const listed = jsonOf(await linkctl('key', 'list', '--app', mine.id, '--json'));
    expect(listed).toEqual({ keys: [] });
    expect(JSON.stringify(listed)).not.toContain(key.key.id);
  });

  it('refuses unknown keys and apps, and missing arguments', async () => {
    await expectFailures(
      ['key'],
      [
        [['revoke', 'key_nope'], 1, /no key with id "key_nope"/],
        [['list', '--app', 'app_nope'], 1, /no app with id "app_nope"/],
        [['revoke'], 2, /missing required argument 'keyId'/],
        [['list'], 2, /required option '--app <appId>' not specified/],
      ],
    );
  });
});

describe('linkctl usage and environment errors', () => {
  it('refuses missing and unknown commands and options with one line', async () => {
    await expectFailures(
      [],
      [
        [[], 2, /missing command; see linkctl --help/],
        [['app'], 2, /missing command; see linkctl app --help/],
        [['key'], 2, /missing command; see linkctl key --help/],
        [['apps'], 2, /unknown command 'apps' \(Did you mean app\?\)/],
        [['app', 'delete'], 2, /unknown command 'delete'/],
        [['--verbose', 'migrate'], 2, /unknown option '--verbose'/],
      ],
    );
  });

  it('prints help on stdout and exits 0', async () => {
    const run = await linkctl('app', 'create', '--help');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^Usage: linkctl app create \[options\]/);
    expect(run.stdout).toContain('--json');
  });

  it('names an unreachable database without leaking its password', async () => {
    const port = await freePort();
    const run = await linkctlInProcess(['key', 'list', '--app', 'app_x', '--json'], {
      DATABASE_URL: `postgres://ops:s3cr3t-pw@127.0.0.1:${port}/linkservice`,
    });
    expectOneLineFailure(
      run,
      1,
      new RegExp(
        `cannot reach the database at 127\\.0\\.0\\.1:${port}/linkservice: .*ECONNREFUSED`,
      ),
    );
    expect(run.stderr).not.toContain('s3cr3t-pw');
  });

  it('says when the database does not exist yet', async () => {
    const url = new URL(testEnvironment().databaseUrl);
    url.pathname = `/linkctl_missing_${randomBytes(4).toString('hex')}`;
    const run = await linkctlInProcess(['app', 'set-allowance', 'app_x', '1'], {
      DATABASE_URL: url.toString(),
    });
    expectOneLineFailure(
      run,
      1,
      /database "linkctl_missing_[0-9a-f]+" does not exist; run linkctl migrate/,
    );
  });

  it('reports every bad variable on one line', async () => {
    const run = await linkctlInProcess(['key', 'list', '--app', 'app_x', '--json'], {
      DATABASE_URL: 'mysql://db/x',
      LINK_DOMAIN: 'not a host',
    });
    expectOneLineFailure(run, 78, /invalid configuration: DATABASE_URL: .*; LINK_DOMAIN: /);
  });
});

describe('linkctl migrate', () => {
  const url = new URL(testEnvironment().databaseUrl);
  const name = `linkctl_migrate_${randomBytes(4).toString('hex')}`;
  url.pathname = `/${name}`;

  afterAll(async () => {
    const server = new URL(url);
    server.pathname = '/postgres';
    const admin = createDb({ connectionString: server.toString(), max: 1 });
    try {
      await sql`DROP DATABASE IF EXISTS ${sql.id(name)} WITH (FORCE)`.execute(admin.db);
    } finally {
      await admin.close();
    }
  });

  it('creates a missing database, applies every migration, then has nothing to do', async () => {
    const first = jsonOf(
      await linkctlInProcess(['migrate', '--json'], { DATABASE_URL: url.toString() }),
    ) as {
      databaseCreated: boolean;
      applied: string[];
    };
    expect(first.databaseCreated).toBe(true);
    expect(first.applied[0]).toBe('2026-11-22T00-00-00_initial');
    expect([...first.applied].sort()).toEqual(first.applied);

    const migrated = createDb({ connectionString: url.toString(), max: 1 });
    try {
      const recorded = await sql<{ name: string }>`
        SELECT name FROM kysely_migration ORDER BY name`.execute(migrated.db);
      expect(recorded.rows.map((row) => row.name)).toEqual(first.applied);
      await migrated.db.selectFrom('api_keys').select('id').limit(1).execute();
    } finally {
      await migrated.close();
    }

    const second = await linkctlInProcess(['migrate'], { DATABASE_URL: url.toString() });
    expect(second).toEqual({ code: 0, stdout: `Database ${name} is up to date\n`, stderr: '' });
    expect(
      jsonOf(await linkctlInProcess(['migrate', '--json'], { DATABASE_URL: url.toString() })),
    ).toEqual({
      databaseCreated: false,
      applied: [],
    });
  });
});

describe('the README (services/linkctl/README.md), run as written', () => {
  const readme = readFileSync(path.join(__dirname, '..', 'README.md'), 'utf8');

  /** The last example of `command` (the walk-through's), without `pnpm -s linkctl`, split as sh would. */
  function exampleArgs(command: string): string[] {
    const line = readme.split('\n').findLast((l) => l.startsWith(`pnpm -s linkctl ${command} `));
    if (line === undefined) throw new Error(`the README has no \`pnpm -s linkctl ${command}\``);
    const words = line.replace(/\s+#.*$/, '').match(/"[^"]*"|\S+/g) ?? [];
    return words.slice(3).map((word) => word.replace(/^"(.*)"$/, '$1'));
  }

  /** The `# …` line under an example: the output it shows. */
  function sampleOutput(command: string): string {
    const lines = readme.split('\n');
    const at = lines.findLastIndex((l) => l.startsWith(`pnpm -s linkctl ${command} `));
    return lines[at + 1]?.replace(/^# /, '') ?? '';
  }

  /** What the README writes for values that differ on every run. */
  function asInReadme(text: string, values: Record<string, string>): string {
    return Object.entries(values).reduce((out, [real, shown]) => out.split(real).join(shown), text);
  }

  it('shows `linkctl --help` as it is', async () => {
    const run = await linkctl('--help');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(readme).toContain(`$ pnpm -s linkctl --help\n${run.stdout}\`\`\``);
  });

  it('runs app create, key create and set-android as shown, with the output shown', async () => {
    const appArgs = exampleArgs('app create');
    const appRun = await linkctl(...appArgs);
    const { app } = jsonOf(appRun) as AppJson;
    const appShown = { [app.id]: 'app_01…', [app.subdomainKey]: 'acme-x7k2p9' };
    expect(asInReadme(appRun.stdout.trimEnd(), appShown)).toBe(
      asInReadme(sampleOutput('app create'), { 'links.localhost': LINK_DOMAIN }),
    );

    const withApp = (args: string[]) => args.map((arg) => (arg === 'app_01…' ? app.id : arg));
    const keyRun = await linkctl(...withApp(exampleArgs('key create')));
    const created = jsonOf(keyRun) as { key: { id: string; createdAt: string }; secret: string };
    const keyShown = {
      ...appShown,
      [created.key.id]: 'key_01…',
      [created.key.createdAt]: '2026-01-01T00:00:00.000Z',
      [created.secret]: 'ls_sk_live_…',
    };
    expect(asInReadme(keyRun.stdout.trimEnd(), keyShown)).toBe(sampleOutput('key create'));

    const text = await linkctl(...withApp(exampleArgs('key create')).filter((a) => a !== '--json'));
    const secret = /ls_sk_live_\S+/.exec(text.stdout)?.[0] ?? 'no secret';
    const [, textKeyId = 'no key', textCreatedAt = 'no time'] =
      /key (key_\S+) for app \S+ at (\S+)/.exec(text.stdout) ?? [];
    const textShown = {
      ...appShown,
      [textKeyId]: 'key_01…',
      [textCreatedAt]: '2026-01-01T00:00:00.000Z',
      [secret]: 'ls_sk_live_…',
    };
    expect(readme).toContain(
      `Without \`--json\`, \`key create\` prints:\n\n\`\`\`text\n${asInReadme(text.stdout, textShown)}\`\`\``,
    );

    const android = await linkctl(...withApp(exampleArgs('app set-android')));
    expect(android).toMatchObject({ code: 0, stderr: '' });
  });
});
