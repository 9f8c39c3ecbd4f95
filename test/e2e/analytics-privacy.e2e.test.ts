import { createHmac, randomBytes, randomInt } from 'node:crypto';
import type { DbHandle } from '@linkservice/db';
import { eventually, freePort, linkOf, sendRequest, testDatabase } from '@linkservice/testing';
import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { OtlpReceiver, SPAN_KIND } from '../support/otlp-receiver';
import type { ServiceName, Stack } from '../support/stack';
import { ALL_SERVICES, sendApiRequest, startRunStack } from '../support/stack';
import type { Tenant } from '../support/tenants';
import { createTenant } from '../support/tenants';

/**
 * Issue 27, item 6: click analytics keep nothing personal, shown on the running stack. Clicks
 * carry markers in everything personal a request brings (the client's address through a trusted
 * X-Forwarded-For, v4 and v6; the user agent; the referrer's path and query; the tapped URL's
 * query besides UTM; a cookie), with every service logging at `trace` and exporting its traces.
 * Then every marker, the day's visitor salt and the visitors (HMACs under it) are searched for in
 * every row of every table of the stack's database, every line every service wrote, every OTLP
 * export request (spans, attributes, events, resources) and every service's /metrics: no hit.
 * What analytics may keep is there (the referrer's host, utm_source, the clicks, the uniques),
 * so the search cannot pass because nothing was stored. The salt and the visitors' HyperLogLogs
 * expire by the end of the next UTC day.
 */

jest.setTimeout(90_000);

const DAY_MS = 24 * 60 * 60 * 1000;
const tag = randomBytes(6).toString('hex');
/** Unique strings a click brings, each of which must never be kept anywhere. */
const MARKERS = {
  userAgent: `uam${tag}`,
  referrerPath: `refpath${tag}`,
  referrerQuery: `refq${tag}`,
  tappedQuery: `tapq${tag}`,
  cookie: `cookie${tag}`,
  ipv4: `198.51.100.${randomInt(100, 200)}`,
  ipv6: `2001:db8:${randomInt(0x1000, 0xffff).toString(16)}:${randomInt(0x1000, 0xffff).toString(16)}::77`,
};
const USER_AGENT = `Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1 ${MARKERS.userAgent}`;
const REFERRER = `https://ref.example/${MARKERS.referrerPath}?q=${MARKERS.referrerQuery}`;
const TAPPED_QUERY = `?secret=${MARKERS.tappedQuery}&utm_source=ok`;
const CLICKS_PER_ADDRESS = 3;

let receiver: OtlpReceiver;
let stack: Stack;
let postgres: DbHandle;
let redis: Redis;
let tenant: Tenant;
const lines: { service: ServiceName; line: string }[] = [];
const metricsPorts = {} as Record<ServiceName, number>;

beforeAll(async () => {
  receiver = await OtlpReceiver.start();
  for (const service of ALL_SERVICES) metricsPorts[service] = await freePort();
  stack = await startRunStack({
    otlpEndpoint: receiver.url,
    logLevel: 'trace',
    onLine: (service, line) => lines.push({ service, line }),
    env: { CLICK_FLUSH_INTERVAL_MS: '200' },
    serviceEnv: {
      gateway: { METRICS_PORT: String(metricsPorts.gateway) },
      worker: { METRICS_PORT: String(metricsPorts.worker) },
      redirect: {
        METRICS_PORT: String(metricsPorts.redirect),
        TRUST_FORWARDED_FOR: 'true',
        GEO_COUNTRY_HEADER: 'cf-ipcountry',
        ANALYTICS_ENABLED: 'true',
      },
    },
  });
  postgres = testDatabase(2);
  redis = new Redis(stack.connectionEnv.REDIS_URL, { lazyConnect: true });
  await redis.connect();
  tenant = await createTenant(postgres.db);
});

afterAll(async () => {
  await stack.stop();
  await postgres.close();
  await receiver.close();
  redis.disconnect();
});

/** The hits of each needle in `haystack` (case-insensitive), as `needle: count` for the ones found. */
function hits(haystack: string, needles: Record<string, string>): Record<string, number> {
  const lower = haystack.toLowerCase();
  const found: Record<string, number> = {};
  for (const [name, needle] of Object.entries(needles)) {
    const count = lower.split(needle.toLowerCase()).length - 1;
    if (count > 0) found[name] = count;
  }
  return found;
}

/**
 * Every row of every table of the database (leaf tables: partitions, not their parents), as its
 * row text (every column: text, json, bytea as hex), searched for each needle.
 */
async function databaseHits(
  needles: Record<string, string>,
): Promise<{ tables: number; rows: number; found: Record<string, string[]> }> {
  const { db } = postgres;
  const tables = await sql<{ name: string }>`
    SELECT format('%I.%I', n.nspname, c.relname) AS name
    FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
    WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema')
      AND n.nspname NOT LIKE 'pg_toast%'
    ORDER BY 1`.execute(db);
  const names = Object.keys(needles);
  const values = names.map((name) => needles[name].toLowerCase());
  const found: Record<string, string[]> = {};
  let rows = 0;
  for (const { name } of tables.rows) {
    const table = sql.raw(name);
    const result = await sql<{ rows: string; matched: number[] | null }>`
      SELECT count(*) AS rows, (
        SELECT array_agg(i) FROM generate_subscripts(${values}::text[], 1) AS i
        WHERE EXISTS (
          SELECT 1 FROM ${table} r WHERE strpos(lower(r::text), (${values}::text[])[i]) > 0
        )
      ) AS matched
      FROM ${table}`.execute(db);
    rows += Number(result.rows[0]?.rows ?? 0);
    for (const index of result.rows[0]?.matched ?? []) {
      (found[names[index - 1]] ??= []).push(name);
    }
  }
  return { tables: tables.rows.length, rows, found };
}

/** A person's click on the link with every marker; resolves with the answer's status. */
async function click(alias: string, address: string): Promise<number> {
  const res = await sendRequest(`${stack.redirect.url}/${alias}${TAPPED_QUERY}`, {
    host: `${tenant.subdomainKey}.${stack.linkDomain}`,
    headers: {
      'user-agent': USER_AGENT,
      referer: REFERRER,
      cookie: `session=${MARKERS.cookie}; _ga=${MARKERS.cookie}`,
      'x-forwarded-for': `${address}, 10.0.0.1`,
      'cf-ipcountry': 'NL',
    },
  });
  return res.status;
}

it('keeps no address, user agent, referrer URL, query, cookie, salt or visitor anywhere, yet counts the clicks', async () => {
  const created = await sendApiRequest(`${stack.apiUrl}/links`, {
    method: 'POST',
    key: tenant.live.secret,
    body: { webFallbackUrl: 'https://privacy.example/landing' },
  });
  expect(created.status).toBe(201);
  const link = linkOf(created);

  const day = Math.floor(Date.now() / DAY_MS);
  const statuses: number[] = [];
  for (const address of [MARKERS.ipv4, MARKERS.ipv6]) {
    for (let n = 0; n < CLICKS_PER_ADDRESS; n++) statuses.push(await click(link.alias, address));
  }
  expect(statuses).toEqual(Array(2 * CLICKS_PER_ADDRESS).fill(302));

  // Counted and flushed: clickCount, and what analytics may keep.
  const clicks = 2 * CLICKS_PER_ADDRESS;
  await eventually(
    async () => {
      const row = await postgres.db
        .selectFrom('link_clicks')
        .select('click_count')
        .where('link_id', '=', link.id)
        .executeTakeFirst();
      return Number(row?.click_count ?? 0) === clicks;
    },
    { timeoutMs: 15_000, what: `clickCount ${clicks}` },
  );
  const kept = await sql<{
    referrer: string;
    utm_source: string;
    country: string;
    platform: string;
    clicks: string;
  }>`
    SELECT referrer, utm_source, country, platform, sum(clicks) AS clicks FROM click_rollup_days
    WHERE app_id = ${tenant.appId} AND link_id = ${link.id}
    GROUP BY 1, 2, 3, 4`.execute(postgres.db);
  expect(kept.rows).toEqual([
    {
      referrer: 'ref.example',
      utm_source: 'ok',
      country: 'NL',
      platform: 'ios',
      clicks: String(clicks),
    },
  ]);
  const uniques = await postgres.db
    .selectFrom('link_click_days')
    .select('unique_visitors')
    .where('link_id', '=', link.id)
    .executeTakeFirstOrThrow();
  // Two addresses, one user agent: two visitors.
  expect(Number(uniques.unique_visitors)).toBe(2);

  // The day's salt, as only Redis holds it, and the visitors it made.
  const saltKey = `${stack.redisPrefix}:{visitor-salt}:${day}`;
  const salt = await redis.get(saltKey);
  expect(salt).toMatch(/^[A-Za-z0-9+/]{43}=$/);
  const saltBytes = Buffer.from(salt ?? '', 'base64');
  const visitors = Object.fromEntries(
    [MARKERS.ipv4, MARKERS.ipv6].map((address, index) => [
      `visitor${index}`,
      createHmac('sha256', saltBytes)
        .update(`${address}\0${USER_AGENT}`)
        .digest()
        .subarray(0, 16)
        .toString('base64url'),
    ]),
  );
  const needles: Record<string, string> = {
    ...MARKERS,
    salt: salt ?? '',
    saltHex: saltBytes.toString('hex'),
    saltBase64Url: saltBytes.toString('base64url'),
    ...visitors,
  };

  // Traces: the redirect's spans of these clicks arrived (so the export was searched, not empty).
  await eventually(
    () =>
      receiver.spans.filter(
        (span) =>
          span.kind === SPAN_KIND.server &&
          span.resource['service.name'] === 'linkservice-redirect',
      ).length >= clicks,
    { timeoutMs: 15_000, what: 'the redirect’s server spans' },
  );
  const metrics = await Promise.all(
    ALL_SERVICES.map(async (service) => {
      const res = await sendRequest(`http://127.0.0.1:${metricsPorts[service]}/metrics`);
      expect(res.status).toBe(200);
      return res.text;
    }),
  );
  const database = await databaseHits(needles);
  const logText = lines.map((entry) => entry.line).join('\n');

  // The search covered something in each place, and finds what is there: the link's id (in its
  // rows and the redirect's spans) and the kept referrer host.
  expect(database.tables).toBeGreaterThan(10);
  const controls = await databaseHits({ linkId: link.id, host: 'ref.example' });
  expect(controls.found.linkId).toEqual(
    expect.arrayContaining(['public.links', 'public.link_clicks']),
  );
  expect(controls.found.host?.length).toBeGreaterThan(0);
  expect(hits(receiver.rawBodies.join('\n'), { linkId: link.id })).toHaveProperty('linkId');
  expect(lines.filter((entry) => entry.service === 'redirect').length).toBeGreaterThan(0);
  expect(receiver.rawBodies.length).toBeGreaterThan(0);
  expect(metrics.every((text) => text.includes('# TYPE'))).toBe(true);
  expect({
    database: database.found,
    logs: hits(logText, needles),
    traces: hits(receiver.rawBodies.join('\n'), needles),
    metrics: hits(metrics.join('\n'), needles),
  }).toEqual({ database: {}, logs: {}, traces: {}, metrics: {} });
  process.stdout.write(
    `privacy search: ${Object.keys(needles).length} needles (${Object.keys(needles).join(', ')}); ` +
      `${database.tables} tables / ${database.rows} rows, ${lines.length} log lines, ` +
      `${receiver.rawBodies.length} OTLP exports (${receiver.spans.length} spans), ` +
      `${metrics.length} /metrics pages: 0 hits\n`,
  );

  // The salt and the day's visitor counts go by the end of the next UTC day, 48 h after it began.
  const endOfNextDay = (day + 2) * DAY_MS;
  const saltExpiry = Number(await redis.pexpiretime(saltKey));
  expect(saltExpiry).toBeGreaterThan(Date.now());
  expect(saltExpiry).toBeLessThanOrEqual(endOfNextDay);
  const visitorKeys: string[] = [];
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(
      cursor,
      'MATCH',
      `${stack.redisPrefix}:*:visitors:${day}:${link.id}`,
      'COUNT',
      1000,
    );
    cursor = next;
    visitorKeys.push(...keys);
  } while (cursor !== '0');
  expect(visitorKeys).toHaveLength(1);
  const hllExpiry = Number(await redis.pexpiretime(visitorKeys[0]));
  expect(hllExpiry).toBeGreaterThan(Date.now());
  expect(hllExpiry).toBeLessThanOrEqual(endOfNextDay);
});
