import { randomBytes } from 'node:crypto';
import type { ApiResponse } from '@linkservice/testing';
import { eventually, linkOf, sendRequest } from '@linkservice/testing';
import { createAppWithLinkctl, stackLinkctl } from '../support/linkctl';
import type { Stack } from '../support/stack';
import { sendApiRequest, startRunStack } from '../support/stack';

/**
 * A customer's whole journey against the spawned, compiled stack, touching it only as customers
 * and operators do: the operator CLI creates the app and key, the HTTP API manages the link, and
 * the link host is followed like a phone would. No database access, no in-process services.
 */

jest.setTimeout(60_000);

const CLICKS_VISIBLE_WITHIN_MS = 5_000;
const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

let stack: Stack;
let secret: string;
let subdomainKey: string;

function linkctl(...args: string[]): Promise<unknown> {
  return stackLinkctl(stack, ...args);
}

function api(
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<ApiResponse> {
  return sendApiRequest(`${stack.apiUrl}${path}`, { method, key: secret, headers, body });
}

/** Follows a link as a phone does: the request goes to the link host, named by Host. */
function follow(alias: string, options: { method?: string; userAgent?: string } = {}) {
  return sendRequest(`${stack.redirect.url}/${alias}`, {
    method: options.method ?? 'GET',
    host: `${subdomainKey}.${stack.linkDomain}`,
    headers: options.userAgent ? { 'user-agent': options.userAgent } : {},
  });
}

async function clickCountReaches(id: string, expected: number): Promise<number> {
  let seen = -1;
  try {
    return await eventually(
      async () => {
        seen = linkOf(await api('GET', `/links/${id}`)).clickCount;
        return seen >= expected && seen;
      },
      { timeoutMs: CLICKS_VISIBLE_WITHIN_MS, intervalMs: 100 },
    );
  } catch {
    throw new Error(
      `clickCount was ${seen}, not ${expected}, ${CLICKS_VISIBLE_WITHIN_MS} ms after the clicks\n${stack.output()}`,
    );
  }
}

beforeAll(async () => {
  stack = await startRunStack();
  const created = await createAppWithLinkctl(stack, 'Journey Inc', 'journey');
  subdomainKey = created.subdomainKey;
  expect(created.app.linkHost).toBe(`${subdomainKey}.${stack.linkDomain}`);
  const key = (await linkctl('key', 'create', '--app', created.app.id, '--env', 'live')) as {
    key: { appId: string; environment: string };
    secret: string;
  };
  expect(key.key).toMatchObject({ appId: created.app.id, environment: 'live' });
  secret = key.secret;
});

afterAll(async () => {
  await stack.stop();
});

it('creates, reads, lists, follows, counts, changes and archives a link', async () => {
  const app = await api('GET', '/app');
  expect(app.status).toBe(200);
  expect(app.body).toMatchObject({ app: { subdomainKey }, environment: 'live' });

  // Create.
  const alias = `spring-${randomBytes(3).toString('hex')}`;
  const createdRes = await api('POST', '/links', {
    alias,
    webFallbackUrl: 'https://journey.example/spring',
    iosFallbackUrl: 'https://apps.apple.com/app/id1',
    deepLinkData: { screen: 'promo', id: 7 },
    tags: ['promo', 'spring', 'promo'],
  });
  expect(createdRes.status).toBe(201);
  expect(createdRes.headers.get('ratelimit-remaining')).not.toBeNull();
  expect(createdRes.headers.get('x-request-id')).toBeTruthy();
  const created = linkOf(createdRes);
  expect(created).toMatchObject({
    alias,
    url: `https://${subdomainKey}.${stack.linkDomain}/${alias}`,
    environment: 'live',
    tags: ['promo', 'spring'],
    deepLinkData: { screen: 'promo', id: 7 },
    archivedAt: null,
    clickCount: 0,
    status: 'active',
  });
  expect(created.id).toMatch(/^lnk_/);
  expect(created.createdAt).toMatch(TIMESTAMP);
  expect(created.updatedAt).toBe(created.createdAt);

  // Read and list.
  const read = await api('GET', `/links/${created.id}`);
  expect(read.status).toBe(200);
  expect(linkOf(read)).toEqual(created);
  const listed = await api('GET', `/links?search=${alias}&tag=spring`);
  expect(listed.status).toBe(200);
  expect(listed.body).toEqual({
    links: [created],
    pagination: { page: 1, perPage: 25, total: 1, pageCount: 1 },
  });

  // Follow: web fallback, iOS fallback for an iPhone; HEAD answers alike but is not a click.
  const head = await follow(alias, { method: 'HEAD' });
  expect(head.status).toBe(302);
  const web = await follow(alias);
  expect(web.status).toBe(302);
  expect(web.headers.get('location')).toBe('https://journey.example/spring');
  expect(web.headers.get('cache-control')).toBe('no-store');
  const ios = await follow(alias, { userAgent: IPHONE });
  expect(ios.status).toBe(302);
  expect(ios.headers.get('location')).toBe('https://apps.apple.com/app/id1');
  // All three were counted (or not) before they were answered, so a count past 2 would show
  // no later than the 2 does.
  expect(await clickCountReaches(created.id, 2)).toBe(2);

  // Change: the very next redirect goes to the new fallback.
  const patched = await api('PATCH', `/links/${created.id}`, {
    webFallbackUrl: 'https://journey.example/summer',
    iosFallbackUrl: null,
  });
  expect(patched.status).toBe(200);
  expect(linkOf(patched)).toMatchObject({
    webFallbackUrl: 'https://journey.example/summer',
    iosFallbackUrl: null,
    clickCount: 2,
  });
  expect(linkOf(patched).updatedAt > created.updatedAt).toBe(true);
  const afterPatch = await follow(alias, { userAgent: IPHONE });
  expect(afterPatch.status).toBe(302);
  expect(afterPatch.headers.get('location')).toBe('https://journey.example/summer');

  // Archive: the link keeps redirecting (and counting); the alias stays taken.
  const archived = await api('DELETE', `/links/${created.id}`);
  expect(archived.status).toBe(200);
  expect(linkOf(archived)).toMatchObject({ id: created.id, status: 'archived' });
  expect(linkOf(archived).archivedAt).toMatch(TIMESTAMP);
  expect(archived.body?.note).toEqual(expect.any(String));
  const afterArchive = await follow(alias);
  expect(afterArchive.status).toBe(302);
  expect(afterArchive.headers.get('location')).toBe('https://journey.example/summer');
  expect(await clickCountReaches(created.id, 4)).toBe(4);

  expect((await api('DELETE', `/links/${created.id}`)).status).toBe(409);
  const again = await api('POST', '/links', { alias, webFallbackUrl: 'https://journey.example' });
  expect(again.status).toBe(422);
  expect(again.body).toMatchObject({
    error: 'invalid_request',
    fields: { alias: expect.any(String) },
  });
  const archivedList = await api('GET', `/links?status=archived&search=${alias}`);
  expect(archivedList.body?.links?.map((l) => l.id)).toEqual([created.id]);
});
