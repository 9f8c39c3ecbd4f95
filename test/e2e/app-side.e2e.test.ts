import { randomBytes } from 'node:crypto';
import type { ApiResponse, HttpResponse } from '@linkservice/testing';
import { eventually, linkOf, sendRequest } from '@linkservice/testing';
import { ANDROID, IPHONE } from '../support/app-journey';
import { createAppWithLinkctl, stackLinkctl } from '../support/linkctl';
import type { Stack } from '../support/stack';
import { sendApiRequest, startRunStack } from '../support/stack';

/**
 * The app side of a customer's journey (app-interface.md) against the spawned, compiled stack,
 * touched only as operators, servers, apps and phones do: linkctl makes the keys and turns the
 * iOS page on, the server creates links with its secret key, the app resolves them with its
 * publishable key, and phones and crawlers follow them on the link host.
 */

jest.setTimeout(60_000);

const SLACK = 'Slackbot-LinkExpanding 1.0 (+https://api.slack.com/robots)';
const TOKEN = '[0-9A-Za-z]{16,}';

let stack: Stack;
let appId: string;
let subdomainKey: string;
let secret: string;
let publishable: { live: string; test: string };

function linkctl(...args: string[]): Promise<unknown> {
  return stackLinkctl(stack, ...args);
}

async function createKey(environment: 'live' | 'test', type: 'secret' | 'publishable') {
  const created = (await linkctl(
    'key',
    'create',
    '--app',
    appId,
    '--env',
    environment,
    '--type',
    type,
  )) as { key: { type: string; environment: string }; secret: string };
  expect(created.key).toMatchObject({ type, environment });
  return created.secret;
}

function api(method: string, path: string, body?: unknown): Promise<ApiResponse> {
  return sendApiRequest(`${stack.apiUrl}${path}`, { method, key: secret, body });
}

/** POST /sdk/resolve's answers: the resolution, or the error body. */
type ResolveBody = Partial<{
  link: { id: string; alias: string; url: string; environment: string };
  deepLinkData: unknown;
  query: Record<string, string>;
  error: string;
  message: string;
}>;

function resolve(url: string, key = publishable.live): Promise<HttpResponse<ResolveBody>> {
  return sendApiRequest<ResolveBody>(`${stack.apiUrl}/sdk/resolve`, {
    method: 'POST',
    key,
    body: { url },
  });
}

/** Follows a link as a phone (or a crawler) does: the request goes to the link host. */
function follow(target: string, options: { method?: string; userAgent?: string } = {}) {
  return sendRequest(`${stack.redirect.url}/${target}`, {
    method: options.method ?? 'GET',
    host: `${subdomainKey}.${stack.linkDomain}`,
    headers: options.userAgent ? { 'user-agent': options.userAgent } : {},
  });
}

async function createLink(fields: Record<string, unknown>) {
  const res = await api('POST', '/links', {
    alias: `app-${randomBytes(4).toString('hex')}`,
    ...fields,
  });
  expect(res.status).toBe(201);
  return linkOf(res);
}

beforeAll(async () => {
  stack = await startRunStack();
  const created = await createAppWithLinkctl(stack, 'App Side', 'appside');
  subdomainKey = created.subdomainKey;
  appId = created.app.id;
  secret = await createKey('live', 'secret');
  publishable = {
    live: await createKey('live', 'publishable'),
    test: await createKey('test', 'publishable'),
  };
  expect(publishable.live).toMatch(/^ls_pk_live_[0-9A-Za-z]{32,}$/);
  expect(publishable.test).toMatch(/^ls_pk_test_[0-9A-Za-z]{32,}$/);
  const listed = (await linkctl('key', 'list', '--app', appId)) as {
    keys: { type: string; environment: string }[];
  };
  expect(listed.keys.map(({ type, environment }) => `${type}/${environment}`)).toEqual([
    'secret/live',
    'publishable/live',
    'publishable/test',
  ]);
});

afterAll(async () => {
  await stack.stop();
});

it('keeps each kind of key to its own interface', async () => {
  const onSecretApi = await sendApiRequest(`${stack.apiUrl}/app`, {
    key: publishable.live,
  });
  expect(onSecretApi.status).toBe(401);
  const onSdk = await resolve(`https://${subdomainKey}.${stack.linkDomain}/anything`, secret);
  expect(onSdk.status).toBe(401);
  expect(onSdk.body?.error).toBe('unauthorised');
});

it('resolves a link to its data, sees a change at once, and keeps resolving it archived', async () => {
  const link = await createLink({
    webFallbackUrl: 'https://journey.example/spring',
    deepLinkData: { screen: 'promo', id: 7 },
  });
  const opened = `http://${subdomainKey}.${stack.linkDomain}/${link.alias}?utm_source=mail&n=1&n=2#top`;
  const res = await resolve(opened);
  expect(res.status).toBe(200);
  expect(res.headers.get('cache-control')).toBe('no-store');
  expect(res.body).toEqual({
    link: { id: link.id, alias: link.alias, url: link.url, environment: 'live' },
    deepLinkData: { screen: 'promo', id: 7 },
    query: { utm_source: 'mail', n: '2' },
  });

  // The test environment's key sees none of the live links: the one 404 of anything unknown.
  const otherEnvironment = await resolve(opened, publishable.test);
  const unknown = await resolve(`https://${subdomainKey}.${stack.linkDomain}/no-such-alias`);
  expect(otherEnvironment.status).toBe(404);
  expect(otherEnvironment.body).toEqual(unknown.body);

  expect(
    (await api('PATCH', `/links/${link.id}`, { deepLinkData: { screen: 'summer' } })).status,
  ).toBe(200);
  expect((await resolve(opened)).body?.deepLinkData).toEqual({ screen: 'summer' });
  expect((await api('DELETE', `/links/${link.id}`)).status).toBe(200);
  expect((await resolve(opened)).status).toBe(200);

  // Resolving counts nothing.
  expect(linkOf(await api('GET', `/links/${link.id}`)).clickCount).toBe(0);
});

it('answers 410 for an expired link', async () => {
  const link = await createLink({
    webFallbackUrl: 'https://journey.example/soon',
    expiresAt: new Date(Date.now() + 2_000).toISOString(),
  });
  await eventually(async () => (await resolve(link.url)).status === 410, {
    timeoutMs: 6_000,
    intervalMs: 200,
  });
  expect((await resolve(link.url)).body?.error).toBe('expired');
});

it('passes the tapped query on to the fallback and a click token on to the Play Store', async () => {
  const web = await createLink({ webFallbackUrl: 'https://journey.example/spring?from=link#deal' });
  const redirected = await follow(`${web.alias}?utm_source=mail&x=%20y`, { userAgent: ANDROID });
  expect(redirected.status).toBe(302);
  expect(redirected.headers.get('location')).toBe(
    'https://journey.example/spring?from=link&utm_source=mail&x=%20y#deal',
  );

  const play = await createLink({
    webFallbackUrl: 'https://play.google.com/store/apps/details?id=com.journey.app',
  });
  const toStore = await follow(play.alias, { userAgent: ANDROID });
  expect(toStore.headers.get('location')).toMatch(
    new RegExp(
      `^https://play\\.google\\.com/store/apps/details\\?id=com\\.journey\\.app&referrer=ls_click%3D${TOKEN}$`,
    ),
  );
  // HEAD answers alike but mints nothing.
  const head = await follow(play.alias, { method: 'HEAD', userAgent: ANDROID });
  expect(head.status).toBe(302);
  expect(head.headers.get('location')).toBe(
    'https://play.google.com/store/apps/details?id=com.journey.app',
  );
});

it('shows crawlers a preview and counts nothing for them', async () => {
  const link = await createLink({
    webFallbackUrl: 'https://journey.example/preview',
    title: 'Spring <sale> & more',
  });
  const preview = await follow(link.alias, { userAgent: SLACK });
  expect(preview.status).toBe(200);
  expect(preview.headers.get('cache-control')).toBe('no-store');
  expect(preview.text).toContain('content="Spring &lt;sale&gt; &amp; more"');
  expect(preview.text).toContain(`<link rel="canonical" href="${link.url}"`);
  expect((await follow(link.alias)).status).toBe(302);
  await eventually(async () => linkOf(await api('GET', `/links/${link.id}`)).clickCount === 1, {
    timeoutMs: 5_000,
    intervalMs: 100,
  });
  // The crawler's visit stayed uncounted once the person's click shows.
  expect(linkOf(await api('GET', `/links/${link.id}`)).clickCount).toBe(1);
});

it('serves the iOS page once the app opts in, and the 302 again once it opts out', async () => {
  const link = await createLink({
    webFallbackUrl: 'https://journey.example/web',
    iosFallbackUrl: 'https://apps.apple.com/app/id1',
  });
  // Followed once before the change, so the link host has it cached.
  expect((await follow(link.alias, { userAgent: IPHONE })).status).toBe(302);

  const setIos = [
    'app',
    'set-ios',
    appId,
    '--team-id',
    'ABCDE12345',
    '--bundle-id',
    'com.journey.app',
  ];
  await linkctl(...setIos, '--deferred-page', 'on');
  const page = await follow(`${link.alias}?campaign=spring`, { userAgent: IPHONE });
  expect(page.status).toBe(200);
  expect(page.headers.get('cache-control')).toBe('no-store');
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(page.text).toMatch(
    new RegExp(`${link.url.replace(/[.?/]/g, '\\$&')}\\?ls_click=${TOKEN}`),
  );
  expect(page.text).toContain('href="https://apps.apple.com/app/id1?campaign=spring"');
  // Android still gets the 302: the page is for iOS only.
  expect((await follow(link.alias, { userAgent: ANDROID })).status).toBe(302);

  await linkctl(...setIos, '--deferred-page', 'off');
  expect((await follow(link.alias, { userAgent: IPHONE })).status).toBe(302);
});
