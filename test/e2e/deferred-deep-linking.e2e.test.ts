import type { Erasure, InstallReport, LinkServiceClient } from '@linkservice/app-sdk';
import {
  LinkServiceError,
  clickTokenFromReferrer,
  clickTokenFromUrl,
  createClient,
  isClickTokenUrl,
} from '@linkservice/app-sdk';
import type { Link } from '@linkservice/contracts';
import { clickTokenKey, hashClickToken, parseClickTokenValue } from '@linkservice/link-cache';
import { sendRequest, testEnvironment } from '@linkservice/testing';
import { Redis } from 'ioredis';
import type { JSONWebKeySet } from 'jose';
import { compactVerify, createLocalJWKSet } from 'jose';
import pg from 'pg';
import type { StackApp } from '../support/app-journey';
import {
  ANDROID,
  IPHONE,
  createStackApp,
  createStackLink,
  followLink,
  testFetch,
} from '../support/app-journey';
import { stackLinkctl } from '../support/linkctl';
import type { Stack } from '../support/stack';
import { startRunStack } from '../support/stack';

/**
 * Deferred deep linking and erasure (app-interface.md, issue 17) end to end, as the pieces meet
 * in the field: a phone taps a link on the link host, the store installs the app, and the app,
 * with @linkservice/app-sdk and its publishable key, reports the install with what the platform
 * hands it (the Play install referrer, the clipboard, the URL it was opened with), and later
 * erases it. Then the database and Redis are searched for anything left about the install.
 */

jest.setTimeout(60_000);

const PLAY_LISTING = 'https://play.google.com/store/apps/details?id=com.journey.app';
const APP_STORE = 'https://apps.apple.com/app/id1';
const TOKEN = /^[0-9A-Za-z]{16,}$/;
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const NO_MATCH = { type: 'none', method: null, clickedAt: null };
/** Well-formed (`ins_` and 26 Crockford base32 characters) but never issued: reaches Postgres. */
const UNKNOWN_INSTALL_ID = 'ins_01J00000000000000000000000';

let stack: Stack;
let app: StackApp;
let live: LinkServiceClient;
let otherEnvironment: LinkServiceClient;
let otherApp: LinkServiceClient;
let database: pg.Client;
let redis: Redis;

beforeAll(async () => {
  const env = testEnvironment();
  stack = await startRunStack();
  app = await createStackApp(stack, 'Journey');
  const elsewhere = await createStackApp(stack, 'Elsewhere');
  const client = (publishableKey: string, owner: StackApp) =>
    createClient({
      baseUrl: stack.gateway.url,
      publishableKey,
      fetch: testFetch,
      linkHosts: [owner.linkHost, owner.testLinkHost],
    });
  live = client(app.publishable.live, app);
  // The same app's test builds: their key must not match a live click.
  otherEnvironment = client(app.publishable.test, app);
  // Another customer's app, live: its key must reach nothing of this one.
  otherApp = client(elsewhere.publishable.live, elsewhere);
  database = new pg.Client({ connectionString: env.databaseUrl });
  await database.connect();
  redis = new Redis(env.redisUrl, { lazyConnect: true });
  await redis.connect();
});

afterAll(async () => {
  await stack.stop();
  await database.end();
  redis.disconnect();
});

/** A tap on a Play Store link by an Android phone without the app: the redirect's Location. */
async function tapToPlayStore(link: Link): Promise<URL> {
  const tap = await followLink(stack, app, link.alias, { userAgent: ANDROID });
  expect(tap.status).toBe(302);
  const location = tap.headers.get('location')!;
  expect(location).toMatch(/[?&]referrer=(?:[^&]*%26)?ls_click%3D[0-9A-Za-z]+$/);
  return new URL(location);
}

/**
 * The install referrer as the Play Install Referrer API hands it to the app: the listing URL's
 * `referrer` parameter, decoded once (`ls_click=<token>`).
 */
function playReferrerOf(listing: URL): string {
  return listing.searchParams.get('referrer')!;
}

/** A tap on an iOS link by an iPhone without the app: what "Get the app" copies. */
async function tapToDeferredPage(link: Link): Promise<string> {
  const page = await followLink(stack, app, link.alias, { userAgent: IPHONE });
  expect(page.status).toBe(200);
  const field = /<input id="link"[^>]*\svalue="([^"]*)"/.exec(page.text);
  expect(field).not.toBeNull();
  return unescapeHtml(field![1]);
}

function unescapeHtml(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

function linkRef(link: Link) {
  return { id: link.id, alias: link.alias, url: link.url, environment: 'live' };
}

/**
 * Whether the click token's Redis record (the link host's record of the click) is held: a
 * used-up token's key holds a tombstone, which is no record.
 */
async function tokenIsHeld(token: string): Promise<boolean> {
  const value = await redis.get(clickTokenKey(stack.redisPrefix, hashClickToken(token)));
  return value !== null && parseClickTokenValue(value) !== null;
}

async function failureOf(call: Promise<unknown>): Promise<LinkServiceError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof LinkServiceError) return error;
    throw error;
  }
  throw new Error('the call did not fail');
}

function expectMatched(
  report: InstallReport,
  link: Link,
  method: string,
  deepLinkData: unknown,
  clickedWithin: [number, number] | null,
) {
  expect(report).toEqual({
    install: {
      id: expect.stringMatching(/^ins_[0-9A-Za-z]+$/),
      secret: expect.stringMatching(/^[0-9A-Za-z]{32,}$/),
    },
    match: {
      type: 'deterministic',
      method,
      clickedAt: clickedWithin === null ? null : expect.stringMatching(ISO_MS),
    },
    link: linkRef(link),
    deepLinkData,
  });
  if (clickedWithin !== null) {
    const clickedAt = Date.parse(report.match.clickedAt!);
    expect(clickedAt).toBeGreaterThanOrEqual(clickedWithin[0]);
    expect(clickedAt).toBeLessThanOrEqual(clickedWithin[1]);
  }
}

function expectUnmatched(report: InstallReport) {
  expect(report.install.id).toMatch(/^ins_/);
  expect(report).toMatchObject({ match: NO_MATCH, link: null, deepLinkData: null });
}

describe('Android: the Play install referrer', () => {
  it('matches its click once, in its own app and environment only', async () => {
    const deepLinkData = { screen: 'promo', id: 7 };
    const link = await createStackLink(stack, app, { webFallbackUrl: PLAY_LISTING, deepLinkData });
    const before = Date.now();
    const listing = await tapToPlayStore(link);
    const after = Date.now();
    expect(`${listing.origin}${listing.pathname}`).toBe(
      'https://play.google.com/store/apps/details',
    );
    expect(listing.searchParams.get('id')).toBe('com.journey.app');
    const playReferrer = playReferrerOf(listing);
    const token = clickTokenFromReferrer(playReferrer);
    expect(playReferrer).toBe(`ls_click=${token}`);
    expect(token).toMatch(TOKEN);

    // The same app's test key and another app's key are refused, and the refusals do not use
    // the token up.
    expectUnmatched(await otherEnvironment.reportInstall({ platform: 'android', playReferrer }));
    expectUnmatched(await otherApp.reportInstall({ platform: 'android', playReferrer }));
    expect(await tokenIsHeld(token!)).toBe(true);

    const report = await live.reportInstall({ platform: 'android', playReferrer });
    expectMatched(report, link, 'play_referrer', deepLinkData, [before, after]);
    // Used up: its Redis key is gone and a second report with it matches nothing.
    expect(await tokenIsHeld(token!)).toBe(false);
    expectUnmatched(await live.reportInstall({ platform: 'android', playReferrer }));
  });

  it('finds the token after the listing’s own referrer', async () => {
    const link = await createStackLink(stack, app, {
      webFallbackUrl: `${PLAY_LISTING}&referrer=utm_source%3Dmail`,
      deepLinkData: { screen: 'mail' },
    });
    const playReferrer = playReferrerOf(await tapToPlayStore(link));
    expect(playReferrer).toMatch(/^utm_source=mail&ls_click=[0-9A-Za-z]+$/);
    const report = await live.reportInstall({ platform: 'android', playReferrer });
    expect(report.match).toMatchObject({ type: 'deterministic', method: 'play_referrer' });
    expect(report.deepLinkData).toEqual({ screen: 'mail' });
  });
});

describe('iOS: the link copied by the Get-the-app page', () => {
  beforeAll(async () => {
    await stackLinkctl(
      stack,
      ...['app', 'set-ios', app.appId, '--team-id', 'ABCDE12345', '--bundle-id', 'com.journey'],
      ...['--deferred-page', 'on'],
    );
  });

  it('matches its click once, in its own environment only', async () => {
    const deepLinkData = { screen: 'product', sku: 'A-1' };
    const link = await createStackLink(stack, app, {
      webFallbackUrl: 'https://journey.example/web',
      iosFallbackUrl: APP_STORE,
      deepLinkData,
    });
    const before = Date.now();
    const clipboardUrl = await tapToDeferredPage(link);
    const after = Date.now();
    const token = clickTokenFromUrl(clipboardUrl);
    expect(clipboardUrl).toBe(`${link.url}?ls_click=${token}`);
    // What the app checks before sending the clipboard anywhere.
    expect(isClickTokenUrl(clipboardUrl, [app.linkHost])).toBe(true);

    expectUnmatched(await otherEnvironment.reportInstall({ platform: 'ios', clipboardUrl }));
    const report = await live.reportInstall({ platform: 'ios', clipboardUrl });
    expectMatched(report, link, 'clipboard', deepLinkData, [before, after]);
    expect(await tokenIsHeld(token!)).toBe(false);
    expectUnmatched(await live.reportInstall({ platform: 'ios', clipboardUrl }));
  });
});

describe('the URL the app was first opened with', () => {
  it('names its link without a token: no click time', async () => {
    const link = await createStackLink(stack, app, {
      webFallbackUrl: 'https://journey.example/opened',
      deepLinkData: { screen: 'opened' },
    });
    const report = await live.reportInstall({
      platform: 'ios',
      openedUrl: `${link.url}?utm_source=mail#top`,
    });
    expectMatched(report, link, 'opened_url', { screen: 'opened' }, null);
  });

  it('uses up the token it carries, and gives its click time', async () => {
    const link = await createStackLink(stack, app, {
      webFallbackUrl: 'https://journey.example/opened',
      iosFallbackUrl: APP_STORE,
    });
    const before = Date.now();
    const copied = await tapToDeferredPage(link);
    const after = Date.now();
    const report = await live.reportInstall({ platform: 'ios', openedUrl: copied });
    expectMatched(report, link, 'opened_url', null, [before, after]);
    // The token is spent: the same URL from the clipboard no longer matches.
    expectUnmatched(await live.reportInstall({ platform: 'ios', clipboardUrl: copied }));
  });
});

describe('erasure', () => {
  /** Every table of the database (public schema), by name. */
  async function tables(): Promise<string[]> {
    const { rows } = await database.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables
       WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`,
    );
    return rows.map((row) => row.table_name);
  }

  /** Table name -> rows whose text (every column) contains `needle`, for tables with any. */
  async function rowsMentioning(needle: string): Promise<Record<string, number>> {
    const found: Record<string, number> = {};
    for (const table of await tables()) {
      const { rows } = await database.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM ${database.escapeIdentifier(table)} AS t
         WHERE strpos(t::text, $1) > 0`,
        [needle],
      );
      if (rows[0].n > 0) found[table] = rows[0].n;
    }
    return found;
  }

  it('leaves nothing about the install, with a receipt the published key verifies', async () => {
    const link = await createStackLink(stack, app, {
      webFallbackUrl: PLAY_LISTING,
      deepLinkData: { screen: 'erase-me' },
    });
    const playReferrer = playReferrerOf(await tapToPlayStore(link));
    const token = clickTokenFromReferrer(playReferrer)!;
    const tokenHash = hashClickToken(token);
    expect(await tokenIsHeld(token)).toBe(true);
    const { install } = await live.reportInstall({ platform: 'android', playReferrer });
    expect(await tokenIsHeld(token)).toBe(false);

    // Before: the install and its used-up click are there, which the searches below must see.
    expect(await rowsMentioning(install.id)).toEqual({ installs: 1, install_clicks: 1 });
    expect(await rowsMentioning(tokenHash)).toEqual({ install_clicks: 1 });

    const misspelt = `${install.secret.slice(0, -1)}${install.secret.endsWith('a') ? 'b' : 'a'}`;
    const wrongSecret = await failureOf(live.eraseInstall(install.id, misspelt));
    const testKey = await failureOf(otherEnvironment.eraseInstall(install.id, install.secret));
    const otherAppKey = await failureOf(otherApp.eraseInstall(install.id, install.secret));
    expect(UNKNOWN_INSTALL_ID).toMatch(/^ins_[0-9A-HJKMNP-TV-Z]{26}$/);
    const unknown = await failureOf(live.eraseInstall(UNKNOWN_INSTALL_ID, install.secret));
    for (const refused of [wrongSecret, testKey, otherAppKey, unknown]) {
      expect(refused).toMatchObject({ status: 404, error: 'not_found' });
      expect(refused.message).toBe(unknown.message);
      expect(refused.fields).toBeUndefined();
    }
    expect(await rowsMentioning(install.id)).toEqual({ installs: 1, install_clicks: 1 });

    const erasure: Erasure = await live.eraseInstall(install.id, install.secret);
    expect(erasure.erased).toEqual({
      installId: install.id,
      erasedAt: expect.stringMatching(ISO_MS),
      records: 2,
    });

    // The receipt, checked as anyone would: a standard JOSE library and the published JWKS.
    const jwksAnswer = await sendRequest<JSONWebKeySet>(live.jwksUrl);
    expect(jwksAnswer.status).toBe(200);
    const jwks = jwksAnswer.body!;
    const verified = await compactVerify(erasure.receipt, createLocalJWKSet(jwks), {
      algorithms: ['EdDSA'],
    });
    expect(verified.protectedHeader).toEqual({ alg: 'EdDSA', kid: jwks.keys[0].kid });
    expect(JSON.parse(new TextDecoder().decode(verified.payload))).toEqual({
      installId: install.id,
      appId: app.appId,
      environment: 'live',
      erasedAt: erasure.erased.erasedAt,
      records: erasure.erased.records,
    });
    // A receipt changed after signing does not verify.
    const [header, , signature] = erasure.receipt.split('.');
    const forged = Buffer.from(
      JSON.stringify({ installId: 'ins_other', appId: app.appId, records: 0 }),
    ).toString('base64url');
    await expect(
      compactVerify(`${header}.${forged}.${signature}`, createLocalJWKSet(jwks)),
    ).rejects.toThrow();

    // Nothing left anywhere: no table holds a row naming the install or its click's token.
    expect(await tables()).toEqual(expect.arrayContaining(['installs', 'install_clicks']));
    expect(await rowsMentioning(install.id)).toEqual({});
    expect(await rowsMentioning(tokenHash)).toEqual({});
    const held = await database.query(
      `SELECT (SELECT count(*) FROM installs WHERE id = $1)::int AS installs,
              (SELECT count(*) FROM install_clicks WHERE install_id = $1)::int AS clicks`,
      [install.id],
    );
    expect(held.rows[0]).toEqual({ installs: 0, clicks: 0 });
    expect(await tokenIsHeld(token)).toBe(false);

    // Erased is gone: the same 404 as any other refusal.
    const again = await failureOf(live.eraseInstall(install.id, install.secret));
    expect(again).toMatchObject({ status: 404, error: 'not_found', message: unknown.message });
  });
});
