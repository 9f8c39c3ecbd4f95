import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { DbHandle } from '@linkservice/db';
import { createDb, migrateToLatest } from '@linkservice/db';
import type { ApiResponse, Tenant } from '@linkservice/testing';
import {
  createKey,
  createTenant,
  deleteKeysWithPrefix,
  eventually,
  freePort,
  linkOf,
  sendRequest,
} from '@linkservice/testing';
import { IPHONE } from '../support/app-journey';
import type { Stack } from '../support/stack';
import { repositoryRoot, sendApiRequest, startStack } from '../support/stack';
import { ReplicatedPostgres } from './replicated-postgres';

/**
 * The services behind PgBouncer in transaction mode, reading from a streaming replica that
 * applies every transaction APPLY_DELAY_MS late (issue 26): the API journey works, every read
 * right after a write shows the write (read-your-writes: a replica miss asks the primary, a
 * write fence sends a stale replica's answer to the primary), reads do go to the replica once it
 * has caught up, its lag is a metric, and no service leaves state in a server session (no named
 * prepared statement, no session SET, lock or LISTEN) for PgBouncer to hand to another client.
 */

jest.setTimeout(120_000);

const APPLY_DELAY_MS = 2_000;
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const REDIS_PREFIX = `replica-tier-${randomBytes(3).toString('hex')}`;

let servers: ReplicatedPostgres | undefined;
let primary: DbHandle;
let replica: DbHandle;
let stack: Stack | undefined;
let tenant: Tenant;
const metricsPorts = { gateway: 0, redirect: 0 };

beforeAll(async () => {
  servers = await ReplicatedPostgres.create({
    database: 'linkservice_replica',
    applyDelay: `${APPLY_DELAY_MS}ms`,
  });
  // Straight to the primary: Kysely's migration lock is a session lock (docs/operations.md).
  await migrateToLatest(servers.directUrl);
  primary = createDb({ connectionString: servers.directUrl, max: 2 });
  replica = createDb({ connectionString: servers.directReplicaUrl, max: 2 });
  tenant = await createTenant(primary.db);
  // The tests compare with what the replica holds: it applies 2 s late, so wait for the schema
  // (a query before it fails: no such relation) and the tenant to be there first.
  await eventually(
    async () =>
      (await replica.db
        .selectFrom('apps')
        .select('id')
        .where('id', '=', tenant.appId)
        .executeTakeFirst()
        .catch(() => undefined)) !== undefined,
    { timeoutMs: 15_000, what: 'the schema and the tenant on the replica' },
  );
  metricsPorts.gateway = await freePort();
  metricsPorts.redirect = await freePort();
  stack = await startStack({
    databaseUrl: servers.bouncerPrimaryUrl,
    redisUrl: REDIS_URL,
    redisPrefix: REDIS_PREFIX,
    exactRedisPrefix: true,
    creationLimitPerHour: 1_000_000,
    env: {
      DATABASE_READ_URL: servers.bouncerReplicaUrl,
      // PgBouncer 1.18: no named statements (a name lives in one server session).
      DATABASE_NAMED_STATEMENTS: 'false',
      DATABASE_READ_POLL_MS: '200',
      // The link host's cache would answer redirects without reading: keep misses frequent.
      LINK_CACHE_TTL_SECONDS: '1',
    },
    serviceEnv: {
      gateway: { METRICS_PORT: String(metricsPorts.gateway) },
      redirect: { METRICS_PORT: String(metricsPorts.redirect) },
    },
  });
}, 120_000);

afterAll(async () => {
  // Whatever failed: nothing of the tier outlives it.
  await stack?.stop(5_000);
  await primary?.close();
  await replica?.close();
  await servers?.remove();
  const redis = new Redis(REDIS_URL);
  await deleteKeysWithPrefix(redis, REDIS_PREFIX).finally(() => redis.quit());
}, 60_000);

function theStack(): Stack {
  if (!stack) throw new Error('the stack did not start');
  return stack;
}

function api(method: string, path: string, body?: unknown): Promise<ApiResponse> {
  return sendApiRequest(`${theStack().apiUrl}${path}`, {
    method,
    key: tenant.live.secret,
    body,
  });
}

function resolve(alias: string): Promise<ApiResponse> {
  return sendApiRequest(`${theStack().apiUrl}/sdk/resolve`, {
    method: 'POST',
    key: tenant.publishable.live.secret,
    body: { url: `https://${tenant.subdomainKey}.${theStack().linkDomain}/${alias}` },
  });
}

function follow(alias: string, userAgent?: string) {
  return sendRequest(`${theStack().redirect.url}/${alias}`, {
    host: `${tenant.subdomainKey}.${theStack().linkDomain}`,
    ...(userAgent ? { headers: { 'user-agent': userAgent } } : {}),
  });
}

/** What the replica itself holds of a link now (bypassing the services). */
async function onReplica(id: string): Promise<string | undefined> {
  const row = await replica.db
    .selectFrom('links')
    .select('web_fallback_url')
    .where('id', '=', id)
    .executeTakeFirst();
  return row?.web_fallback_url;
}

/** One sample value of a service's metrics; labels must match exactly the ones given. */
async function metric(
  service: 'gateway' | 'redirect',
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const res = await sendRequest(`http://127.0.0.1:${metricsPorts[service]}/metrics`);
  const wanted = Object.entries(labels)
    .map(([key, value]) => `${key}="${value}"`)
    .join(',');
  const line = res.text
    .split('\n')
    .find((l) => l.startsWith(wanted ? `${name}{${wanted}} ` : `${name} `));
  if (!line) throw new Error(`no ${name}{${wanted}} in the ${service}'s metrics`);
  return Number(line.split(' ').at(-1));
}

const stale = (service: 'gateway' | 'redirect') =>
  metric(service, 'linkservice_db_reads_total', { source: 'primary', reason: 'stale' });
const replicaReads = (service: 'gateway' | 'redirect') =>
  metric(service, 'linkservice_db_reads_total', { source: 'replica', reason: 'none' });

/** The compiled linkctl, as an operator runs it: through PgBouncer, on the stack's Redis prefix. */
async function linkctl(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return promisify(execFile)(
    process.execPath,
    [join(repositoryRoot(), 'services', 'linkctl', 'dist', 'main.js'), ...args, '--json'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        DATABASE_URL: servers?.bouncerPrimaryUrl ?? '',
        REDIS_URL,
        REDIS_PREFIX,
        LINK_DOMAIN: theStack().linkDomain,
      },
      timeout: 15_000,
    },
  );
}

function uniqueAlias(): string {
  return `rep-${randomBytes(4).toString('hex')}`;
}

describe('behind PgBouncer in transaction mode, with a replica applying 2 s late', () => {
  it('reads, resolves and redirects a link right after its 201', async () => {
    const alias = uniqueAlias();
    const created = await api('POST', '/links', {
      alias,
      webFallbackUrl: 'https://replica.example/created',
      deepLinkData: { step: 'created' },
    });
    expect(created.status).toBe(201);
    const link = linkOf(created);
    // The replica has not applied it yet: every answer below needed the primary.
    expect(await onReplica(link.id)).toBeUndefined();

    const got = await api('GET', `/links/${link.id}`);
    expect(got.status).toBe(200);
    expect(linkOf(got).webFallbackUrl).toBe('https://replica.example/created');
    const listed = await api('GET', '/links?perPage=100');
    expect(listed.status).toBe(200);
    expect((listed.body as { links: { id: string }[] }).links.map((l) => l.id)).toContain(link.id);
    const resolved = await resolve(alias);
    expect(resolved.status).toBe(200);
    expect(resolved.body).toMatchObject({
      link: { id: link.id },
      deepLinkData: { step: 'created' },
    });
    const redirected = await follow(alias);
    expect(redirected.status).toBe(302);
    expect(redirected.headers.get('location')).toBe('https://replica.example/created');
  });

  it('shows a PATCH and an archive on the very next read, while the replica still has the old row', async () => {
    const alias = uniqueAlias();
    const created = await api('POST', '/links', {
      alias,
      webFallbackUrl: 'https://replica.example/before',
      deepLinkData: { step: 'before' },
    });
    expect(created.status).toBe(201);
    const { id } = linkOf(created);
    // Wait until the replica holds the link: from then on its answer is found, only stale.
    await eventually(async () => (await onReplica(id)) !== undefined, {
      timeoutMs: 10_000,
      what: 'the link on the replica',
    });
    const staleBefore = { gateway: await stale('gateway'), redirect: await stale('redirect') };

    const patched = await api('PATCH', `/links/${id}`, {
      webFallbackUrl: 'https://replica.example/after',
      deepLinkData: { step: 'after' },
    });
    expect(patched.status).toBe(200);
    const got = await api('GET', `/links/${id}`);
    expect(linkOf(got).webFallbackUrl).toBe('https://replica.example/after');
    const listed = await api('GET', '/links?perPage=100');
    const inList = (listed.body as { links: { id: string; webFallbackUrl: string }[] }).links.find(
      (l) => l.id === id,
    );
    expect(inList?.webFallbackUrl).toBe('https://replica.example/after');
    expect(await resolve(alias)).toMatchObject({ body: { deepLinkData: { step: 'after' } } });
    const redirected = await follow(alias);
    expect(redirected.headers.get('location')).toBe('https://replica.example/after');
    // The replica really was behind, and the fence sent those reads to the primary.
    expect(await onReplica(id)).toBe('https://replica.example/before');
    expect(await stale('gateway')).toBeGreaterThan(staleBefore.gateway);
    expect(await stale('redirect')).toBeGreaterThan(staleBefore.redirect);

    const archived = await api('DELETE', `/links/${id}`);
    expect(archived.status).toBe(200);
    expect(linkOf(await api('GET', `/links/${id}`)).status).toBe('archived');
  });

  it('makes every link of a batch readable right after the 201', async () => {
    const batch = await api('POST', '/links/batch', {
      links: [
        { webFallbackUrl: 'https://replica.example/b1' },
        { webFallbackUrl: 'https://replica.example/b2' },
        { webFallbackUrl: 'https://replica.example/b3' },
      ],
    });
    expect(batch.status).toBe(201);
    const ids = (batch.body as { results: { link?: { id: string } }[] }).results.map((r) => {
      if (!r.link) throw new Error(`an entry was not created: ${batch.text}`);
      return r.link.id;
    });
    expect(ids).toHaveLength(3);
    for (const id of ids) expect((await api('GET', `/links/${id}`)).status).toBe(200);
  });

  it('serves reads from the replica once it has caught up, and shows its lag', async () => {
    const alias = uniqueAlias();
    const created = await api('POST', '/links', {
      alias,
      webFallbackUrl: 'https://replica.example/lag',
    });
    const { id } = linkOf(created);
    // While the write waits out the apply delay, the replica reports being behind.
    await eventually(
      async () => (await metric('gateway', 'linkservice_db_replica_lag_seconds')) >= 1,
      {
        timeoutMs: APPLY_DELAY_MS * 3,
        what: 'a replica lag of a second or more',
      },
    );
    await eventually(async () => (await onReplica(id)) !== undefined, {
      timeoutMs: 10_000,
      what: 'the link on the replica',
    });
    await eventually(
      async () => (await metric('gateway', 'linkservice_db_replica_lag_seconds')) === 0,
      {
        timeoutMs: 5_000,
        what: 'the replica caught up',
      },
    );
    const before = {
      gateway: await replicaReads('gateway'),
      redirect: await replicaReads('redirect'),
    };
    const got = await api('GET', `/links/${id}`);
    expect(linkOf(got).webFallbackUrl).toBe('https://replica.example/lag');
    expect((await resolve(alias)).status).toBe(200);
    // The cache entry of an earlier redirect (1 s) may answer: wait it out, then redirect.
    await eventually(
      async () => {
        expect((await follow(alias)).status).toBe(302);
        return (await replicaReads('redirect')) > before.redirect;
      },
      { timeoutMs: 5_000, intervalMs: 200, what: 'a redirect miss read on the replica' },
    );
    expect(await replicaReads('gateway')).toBeGreaterThanOrEqual(before.gateway + 2);
  });

  it("shows linkctl's iOS deferred page on the very next redirect, while the replica has the app without it", async () => {
    const alias = uniqueAlias();
    const created = await api('POST', '/links', {
      alias,
      webFallbackUrl: 'https://replica.example/web',
      iosFallbackUrl: 'https://apps.apple.com/app/id1',
    });
    expect(created.status).toBe(201);
    const { id } = linkOf(created);
    await eventually(async () => (await onReplica(id)) !== undefined, {
      timeoutMs: 10_000,
      what: 'the link on the replica',
    });
    // Cached as it is now: an iPhone goes to the App Store.
    expect((await follow(alias, IPHONE)).status).toBe(302);
    const deferredOnReplica = async () =>
      (
        await replica.db
          .selectFrom('app_associations')
          .select('ios_deferred_page')
          .where('app_id', '=', tenant.appId)
          .where('environment', '=', 'live')
          .executeTakeFirst()
      )?.ios_deferred_page === true;
    const staleBefore = await stale('redirect');

    const set = await linkctl(
      ...['app', 'set-ios', tenant.appId, '--team-id', 'ABCDE12345', '--bundle-id', 'com.rep'],
      ...['--deferred-page', 'on'],
    );
    expect(set.stderr).toBe('');
    // linkctl invalidated the host: the miss after it must not refill the old row from the
    // replica (no write fence of the gateway's covers this change; the host's generation does).
    const page = await follow(alias, IPHONE);
    expect(page.status).toBe(200);
    expect(await deferredOnReplica()).toBe(false);
    expect(await stale('redirect')).toBeGreaterThan(staleBefore);
  });

  it('refuses a key linkctl revoked on the very next request, while the replica still accepts it', async () => {
    const key = await createKey(primary.db, tenant.appId, 'live');
    const created = await api('POST', '/links', { webFallbackUrl: 'https://replica.example/k' });
    const { id } = linkOf(created);
    const readWith = (secret: string) =>
      sendApiRequest(`${theStack().apiUrl}/links/${id}`, { method: 'GET', key: secret });
    const activeOnReplica = async () =>
      (
        await replica.db
          .selectFrom('api_keys')
          .select('revoked_at')
          .where('id', '=', key.id)
          .executeTakeFirst()
      )?.revoked_at === null;
    await eventually(async () => (await activeOnReplica()) && (await onReplica(id)) !== undefined, {
      timeoutMs: 10_000,
      what: 'the key and the link on the replica',
    });
    expect((await readWith(key.secret)).status).toBe(200);

    const revoked = await linkctl('key', 'revoke', key.id);
    expect(revoked.stderr).toBe('');
    expect((await readWith(key.secret)).status).toBe(401);
    expect(await activeOnReplica()).toBe(true);
  });

  it('leaves nothing in a server session: no named statement, session SET, lock or LISTEN', async () => {
    const lines = ['primary', 'replica'].flatMap((server) =>
      (servers?.serverLog(server as 'primary' | 'replica') ?? '')
        .split('\n')
        .filter((line) => line.startsWith('linkservice-')),
    );
    // The services' statements are there (through PgBouncer, unnamed, extended protocol)…
    expect(lines.filter((line) => line.includes('execute <unnamed>:')).length).toBeGreaterThan(20);
    // …and none that would tie a client to one server connection.
    const sessionBound = lines.filter(
      (line) =>
        /(execute|parse) (?!<unnamed>)[^ :]+:/.test(line) ||
        // PgBouncer itself sets the parameters it tracks (application_name…) per client.
        /statement: (?:[^;]*;\s*)*SET (?!LOCAL\b)(?:SESSION )?(?!(?:application_name|client_encoding|datestyle|timezone|standard_conforming_strings|intervalstyle)\b)/i.test(
          line,
        ) ||
        /pg_advisory_lock|pg_try_advisory_lock|\bLISTEN\b|CREATE TEMP/i.test(line),
    );
    expect(sessionBound).toEqual([]);
    // PgBouncer served both databases in transaction mode over its few server connections.
    const admin = createDb({ connectionString: servers?.bouncerAdminUrl ?? '', max: 1 });
    try {
      const pools = await sql<{ database: string; pool_mode: string }>`SHOW POOLS`.execute(
        admin.db,
      );
      const modes = pools.rows.filter((p) => p.database === 'primary' || p.database === 'replica');
      expect(modes.map((p) => [p.database, p.pool_mode]).sort()).toEqual([
        ['primary', 'transaction'],
        ['replica', 'transaction'],
      ]);
    } finally {
      await admin.close();
    }
  });
});
