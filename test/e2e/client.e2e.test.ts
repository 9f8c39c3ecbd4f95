import { randomBytes } from 'node:crypto';
import type { FetchLike, Link, LinkServiceClient, LinkServiceErrorOf } from '@linkservice/client';
import { LinkServiceError, createClient, isLinkServiceError } from '@linkservice/client';
import type { StackApp } from '../support/app-journey';
import { createStackApp, testFetch } from '../support/app-journey';
import { stackLinkctl } from '../support/linkctl';
import type { Stack } from '../support/stack';
import { startRunStack } from '../support/stack';

/**
 * @linkservice/client against the spawned, compiled stack, as a customer's server uses it with
 * its secret key: create, read, list page by page, change, archive, batch-create (past 100
 * entries through the split helper), and the typed errors of each failure on the way.
 */

jest.setTimeout(60_000);

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const WEB = 'https://acme.example/web';

let stack: Stack;
let app: StackApp;
let client: LinkServiceClient;
/** Every URL the client asked for, in order. */
let requested: string[];

function unique(prefix: string): string {
  return `${prefix}-${randomBytes(4).toString('hex')}`;
}

/** The rejection of `call`, which must reject with a LinkServiceError of `slug`. */
async function failureOf<S extends LinkServiceError['slug']>(
  call: Promise<unknown>,
  slug: S,
): Promise<LinkServiceErrorOf<S>> {
  const error = await call.then(
    () => {
      throw new Error(`the call did not fail (expected ${slug})`);
    },
    (caught: unknown) => caught,
  );
  if (isLinkServiceError(error, slug)) return error;
  throw error;
}

beforeAll(async () => {
  stack = await startRunStack();
  app = await createStackApp(stack, 'Client');
  requested = [];
  // The tests' one HTTP client (no keep-alive, so the stopped stack leaves no socket behind).
  const fetch: FetchLike = (url, init) => {
    requested.push(url);
    return testFetch(url, init);
  };
  client = createClient({ baseUrl: stack.apiUrl, apiKey: app.secret, fetch });
});

afterAll(async () => {
  await stack.stop();
});

it('names the app of the key, and nothing of another app', async () => {
  const own = await client.getApp();
  expect(own).toEqual({
    app: {
      id: app.appId,
      name: 'Client',
      subdomainKey: app.subdomainKey,
      linkHost: app.linkHost,
    },
    environment: 'live',
  });
  expect(client.environment).toBe('live');
  expect(await client.getAppById(app.appId)).toEqual(own);
  const missing = await failureOf(client.getAppById('app_01J00000000000000000000000'), 'not_found');
  expect(missing).toMatchObject({ status: 404, attempts: 1 });
  expect(missing.requestId).toBeTruthy();
});

it('creates, reads, changes and archives a link; archiving twice is a typed conflict', async () => {
  const alias = unique('spring');
  const created = await client.createLink({
    alias,
    webFallbackUrl: WEB,
    deepLinkData: { screen: 'product', id: 42 },
    title: 'Spring sale',
    tags: ['spring', 'spring', 'sale'],
    expiresAt: '2099-01-01T00:00:00+01:00',
  });
  const { link } = created;
  expect(created).toMatchObject({ replayed: false, attempts: 1 });
  expect(created.requestId).toBeTruthy();
  expect(created.rateLimit).toEqual({
    limit: 300,
    remaining: expect.any(Number) as number,
    resetSeconds: expect.any(Number) as number,
  });
  expect(link).toEqual({
    id: expect.stringMatching(/^lnk_/) as string,
    alias,
    url: `https://${app.linkHost}/${alias}`,
    environment: 'live',
    webFallbackUrl: WEB,
    iosFallbackUrl: null,
    deepLinkData: { screen: 'product', id: 42 },
    title: 'Spring sale',
    campaign: null,
    channel: null,
    feature: null,
    tags: ['spring', 'sale'],
    expiresAt: '2098-12-31T23:00:00Z',
    archivedAt: null,
    createdAt: expect.stringMatching(ISO_MS) as string,
    updatedAt: link.createdAt,
    clickCount: 0,
    status: 'active',
  } satisfies Link);

  expect(await client.getLink(link.id)).toEqual(link);

  const changed = await client.updateLink(link.id, { title: null, campaign: 'spring-26' });
  expect(changed).toEqual({
    ...link,
    title: null,
    campaign: 'spring-26',
    updatedAt: expect.stringMatching(ISO_MS) as string,
  });
  expect(await client.getLink(link.id)).toEqual(changed);

  const archived = await client.archiveLink(link.id);
  expect(archived.link).toMatchObject({
    id: link.id,
    status: 'archived',
    archivedAt: expect.stringMatching(ISO_MS) as string,
  });
  expect(archived.note).toMatch(/archived/i);

  const again = await failureOf(client.archiveLink(link.id), 'conflict');
  expect(again).toMatchObject({ status: 409, attempts: 1 });
  expect(again).toBeInstanceOf(LinkServiceError);
  const patchArchived = await failureOf(client.updateLink(link.id, { title: 'x' }), 'conflict');
  expect(patchArchived.status).toBe(409);
});

it('answers bad fields as a typed invalid_request, and unknown links as not_found', async () => {
  const alias = unique('taken');
  const { link } = await client.createLink({ alias, webFallbackUrl: WEB });

  const duplicate = await failureOf(
    client.createLink({ alias, webFallbackUrl: WEB }),
    'invalid_request',
  );
  expect(duplicate.status).toBe(422);
  expect(duplicate.planLimitReached).toBe(false);
  expect(Object.keys(duplicate.fields)).toEqual(['alias']);
  // A 422 is final: the client does not retry it, key or no key.
  expect(duplicate.attempts).toBe(1);

  const invalid = await failureOf(
    client.updateLink(link.id, { webFallbackUrl: 'ftp://acme.example', tags: [''] }),
    'invalid_request',
  );
  expect(Object.keys(invalid.fields).sort()).toEqual(['tags', 'webFallbackUrl']);
  for (const message of Object.values(invalid.fields)) expect(typeof message).toBe('string');

  const missing = await failureOf(client.getLink('lnk_01J00000000000000000000000'), 'not_found');
  expect(missing.status).toBe(404);
  await failureOf(client.archiveLink('lnk_01J00000000000000000000000'), 'not_found');
  await failureOf(client.updateLink('lnk_01J00000000000000000000000', {}), 'not_found');
});

it('refuses an unknown key as unauthorised', async () => {
  const stranger = createClient({
    baseUrl: stack.gateway.url, // without /api/v1: the client adds it
    apiKey: `ls_sk_live_${'0'.repeat(32)}`,
    fetch: testFetch,
  });
  const refused = await failureOf(stranger.getApp(), 'unauthorised');
  expect(refused.status).toBe(401);
});

it('lists the links page by page, and iterates over every page', async () => {
  const tag = unique('page');
  const entries = Array.from({ length: 7 }, (_, index) => ({
    alias: `${tag}-${index}`,
    webFallbackUrl: WEB,
    tags: [tag],
  }));
  const batch = await client.createLinks(entries);
  expect(batch).toMatchObject({ status: 201, created: 7, failed: 0, notAttempted: 0 });
  expect(batch.results.map((result) => result.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);

  const first = await client.listLinks({ tag, perPage: 3, sort: 'oldest' });
  expect(first.pagination).toEqual({ page: 1, perPage: 3, total: 7, pageCount: 3 });
  expect(first.links.map((link) => link.alias)).toEqual(entries.slice(0, 3).map((e) => e.alias));
  expect(first.links[0].clickCount).toBe(0);

  requested = [];
  const seen: string[] = [];
  for await (const link of client.iterateLinks({ tag, perPage: 3, sort: 'oldest' })) {
    seen.push(link.alias);
  }
  expect(seen).toEqual(entries.map((entry) => entry.alias));
  expect(requested.map((url) => new URL(url).searchParams.get('page'))).toEqual(['1', '2', '3']);

  // Filters reach the server: nothing of this tag is archived.
  const archived = await client.listLinks({ tag, status: 'archived' });
  expect(archived.links).toEqual([]);
  expect(archived.pagination.total).toBe(0);
});

it('batch-creates more than 100 entries in chunks, merged by index', async () => {
  const tag = unique('bulk');
  const entries = Array.from({ length: 150 }, (_, index) => ({
    alias: `${tag}-${index}`,
    webFallbackUrl: index === 120 ? 'not a url' : WEB,
    tags: [tag],
  }));
  requested = [];
  const report = await client.createLinksInBatches(entries);
  expect(requested.filter((url) => url.endsWith('/links/batch'))).toHaveLength(2);
  expect(report).toMatchObject({ created: 149, failed: 1, notAttempted: 0 });
  expect(report.stoppedEarly).toBeUndefined();
  expect(report.interrupted).toBeUndefined();
  expect(report.chunks.map(({ offset, size, status }) => [offset, size, status])).toEqual([
    [0, 100, 201],
    [100, 50, 207],
  ]);
  expect(report.results.map((result) => result.index)).toEqual(entries.map((_, index) => index));
  for (const result of report.results) {
    if (result.ok) expect(result.link.alias).toBe(entries[result.index].alias);
  }
  expect(report.results[120]).toMatchObject({
    index: 120,
    ok: false,
    error: 'validation_failed',
    fieldErrors: { webFallbackUrl: expect.any(String) as string },
  });

  const listed: Link[] = [];
  for await (const link of client.iterateLinks({ tag, perPage: 200 })) listed.push(link);
  expect(listed).toHaveLength(149);
});

it('stops the chunks where the plan allowance ran out, counting the rest as not attempted', async () => {
  const limited = await createStackApp(stack, 'Allowance');
  await stackLinkctl(stack, 'app', 'set-allowance', limited.appId, '120');
  const limitedClient = createClient({
    baseUrl: stack.apiUrl,
    apiKey: limited.secret,
    fetch: testFetch,
  });
  const entries = Array.from({ length: 250 }, () => ({ webFallbackUrl: WEB }));
  const report = await limitedClient.createLinksInBatches(entries);
  expect(report).toMatchObject({
    created: 120,
    failed: 1,
    notAttempted: 129,
    stoppedEarly: { reason: 'plan_limit_reached', atIndex: 120 },
  });
  // The third chunk was never sent.
  expect(report.chunks.map(({ offset, status }) => [offset, status])).toEqual([
    [0, 201],
    [100, 207],
  ]);
  expect(report.results).toHaveLength(121);
  expect(report.results[120]).toMatchObject({ index: 120, ok: false, error: 'plan_limit_reached' });

  const refused = await failureOf(
    limitedClient.createLink({ webFallbackUrl: WEB }),
    'invalid_request',
  );
  expect(refused).toMatchObject({ planLimitReached: true, fields: {}, attempts: 1 });
});
