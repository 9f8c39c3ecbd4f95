import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database, Environment } from '@linkservice/db';
import { linkHostFor } from '@linkservice/contracts';
import type { ClickTokenRecord } from '@linkservice/link-cache';
import {
  LinkCache,
  clickTokenKey,
  clickTokenPattern,
  hashClickToken,
  parseClickTokenValue,
} from '@linkservice/link-cache';
import type { RedisClient } from '@linkservice/lifecycle';
import { createLogger } from '@linkservice/logger';
import type { HttpResponse, Tenant } from '@linkservice/testing';
import {
  createTenant,
  eventually,
  scanKeys,
  sendRequest,
  testEnvironment,
} from '@linkservice/testing';
import type { Kysely } from 'kysely';
import { createApp } from '../app';
import type { RedirectConfig } from '../config';
import { loadConfig } from '../config';
import type { RedirectResources } from '../deps';
import { buildDeps } from '../deps';

export const LINK_DOMAIN = 'links.test';

/** For startRedirect: the flush timer never fires during a test; tests flush when they need to. */
export const FLUSH_ONLY_WHEN_ASKED = { CLICK_FLUSH_INTERVAL_MS: '600000' };

/** User agents the rules tell apart. */
export const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';
export const ANDROID =
  'Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Mobile Safari/537.36';
export const FACEBOOK = 'facebookexternalhit/1.1 (+http://www.facebook.com/externalhit_uatext.php)';

export interface Harness {
  config: RedirectConfig;
  resources: RedirectResources;
  db: Kysely<Database>;
  /** The cache as the gateway and worker see it, for invalidations. */
  cache: LinkCache;
  port: number;
  get(path: string, options?: RequestOptions): Promise<Answer>;
  /**
   * Resolves once the cache holds an entry (positive or negative) for the alias: the service
   * fills it after answering, so a test that relies on a cached answer waits for it.
   */
  cached(host: TestApp, alias: string, environment?: Environment): Promise<void>;
  close(): Promise<void>;
}

export interface RequestOptions {
  method?: string;
  host?: string;
  headers?: Record<string, string>;
}

export type Answer = HttpResponse;

/** The redirect service in this process on 127.0.0.1:0, wired exactly as main.ts wires it. */
export async function startRedirect(env: Record<string, string> = {}): Promise<Harness> {
  const { databaseUrl, redisUrl, redisPrefix } = testEnvironment();
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    // A prefix of its own: the redirects of test files running at once must not flush each
    // other's clicks (a flush would find its clicks taken, and applied by another's statement).
    REDIS_PREFIX: `${redisPrefix}:${randomBytes(4).toString('hex')}`,
    LINK_DOMAIN,
    DATABASE_POOL_SIZE: '5',
    ...env,
  });
  const resources = buildDeps(config, createLogger('redirect-test', 'silent'));
  // Commands fail while Redis is still connecting (no offline queue): start once it answers,
  // unless the test points at a Redis that is not there.
  if (!env.REDIS_URL && resources.deps.redis.status !== 'ready') {
    await once(resources.deps.redis, 'ready');
  }
  const server: Server = createServer(createApp(resources.deps, { isShuttingDown: () => false }));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  const cache = new LinkCache(resources.deps.redis, config.REDIS_PREFIX);
  return {
    config,
    resources,
    db: resources.deps.db,
    cache,
    port,
    get: (path, options) => sendRequest(`http://127.0.0.1:${port}${path}`, options),
    cached: async (app, alias, environment = 'live') => {
      const ref = { subdomainKey: app.subdomainKey, environment, alias };
      await eventually(async () => (await cache.lookup(ref)).kind === 'hit' || undefined, {
        timeoutMs: 5_000,
        what: `a cache entry for ${alias}`,
      });
    },
    close: async () => {
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
      await resources.close();
    },
  };
}

/**
 * The redirect of a test file: started before its tests (`startRedirect(env)`), closed after
 * them. The harness answers for whichever is running.
 */
export function redirectForFile(env: Record<string, string> = FLUSH_ONLY_WHEN_ASKED): Harness {
  let started: Harness | undefined;
  beforeAll(async () => {
    started = await startRedirect(env);
  });
  afterAll(async () => {
    await started?.close();
  });
  const running = (): Harness => {
    if (!started) throw new Error('the redirect starts in beforeAll');
    return started;
  };
  return {
    get config() {
      return running().config;
    },
    get resources() {
      return running().resources;
    },
    get db() {
      return running().db;
    },
    get cache() {
      return running().cache;
    },
    get port() {
      return running().port;
    },
    get: (path, options) => running().get(path, options),
    cached: (app, alias, environment) => running().cached(app, alias, environment),
    close: () => running().close(),
  };
}

/** A tenant (see createTenant) with the two hosts its links answer on here. */
export interface TestApp extends Tenant {
  /** `<key>.links.test` and `<key>-test.links.test`. */
  liveHost: string;
  testHost: string;
}

export async function createTestApp(db: Kysely<Database>): Promise<TestApp> {
  const tenant = await createTenant(db);
  return {
    ...tenant,
    liveHost: linkHostFor(tenant.subdomainKey, 'live', LINK_DOMAIN),
    testHost: linkHostFor(tenant.subdomainKey, 'test', LINK_DOMAIN),
  };
}

/** A link's flushed clicks (its link_clicks row, 0 without one); throws for an unknown link. */
export async function clickCount(db: Kysely<Database>, linkId: string): Promise<number> {
  const row = await db
    .selectFrom('links')
    .leftJoin('link_clicks', 'link_clicks.link_id', 'links.id')
    .select('link_clicks.click_count')
    .where('links.id', '=', linkId)
    .executeTakeFirstOrThrow();
  return row.click_count ?? 0;
}

/** A click token as stored (see @linkservice/link-cache's click-token-store.ts), and its time left. */
export interface StoredClickToken extends ClickTokenRecord {
  ttlMs: number;
}

/** What is stored for the token `token` (its text, as handed out), or null when nothing is. */
export async function storedClickToken(
  redis: RedisClient,
  redisPrefix: string,
  token: string,
): Promise<StoredClickToken | null> {
  const key = clickTokenKey(redisPrefix, hashClickToken(token));
  const [value, ttlMs] = await redis
    .multi()
    .get(key)
    .pttl(key)
    .exec()
    .then((results) => (results ?? []).map(([, result]) => result));
  const record = typeof value === 'string' ? parseClickTokenValue(value) : null;
  return record && { ...record, ttlMs: Number(ttlMs) };
}

/** How many click tokens under `redisPrefix` name one of `linkIds` (a SCAN: tests only). */
export async function clickTokensNaming(
  redis: RedisClient,
  redisPrefix: string,
  linkIds: readonly string[],
): Promise<number> {
  const keys = await scanKeys(redis, clickTokenPattern(redisPrefix));
  const values = await Promise.all(keys.map((key) => redis.get(key)));
  return values.filter((value) => {
    const record = value === null ? null : parseClickTokenValue(value);
    return record !== null && linkIds.includes(record.linkId);
  }).length;
}

/** Click tokens stored for any link of the app. */
export async function clickTokensOfApp(h: Harness, appId: string): Promise<number> {
  const links = await h.db.selectFrom('links').select('id').where('app_id', '=', appId).execute();
  return clickTokensNaming(
    h.resources.deps.redis,
    h.config.REDIS_PREFIX,
    links.map((link) => link.id),
  );
}

/** The app's iOS deferred-page choice for one environment (with made-up iOS settings). */
export async function setDeferredPage(
  db: Kysely<Database>,
  app: TestApp,
  environment: Environment,
  on: boolean,
): Promise<void> {
  await db
    .insertInto('app_associations')
    .values({
      app_id: app.appId,
      environment,
      ios_team_id: 'ABCDE12345',
      ios_bundle_id: 'com.example.app',
      ios_deferred_page: on,
    })
    .onConflict((oc) =>
      oc.columns(['app_id', 'environment']).doUpdateSet({ ios_deferred_page: on }),
    )
    .execute();
}
