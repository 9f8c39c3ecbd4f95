import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import type { IncomingHttpHeaders, Server } from 'node:http';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Database, Environment } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { LinkCache } from '@linkservice/link-cache';
import { createLogger } from '@linkservice/logger';
import { testEnvironment } from '@linkservice/testing';
import type { Kysely } from 'kysely';
import { createApp } from '../app';
import type { RedirectConfig } from '../config';
import { loadConfig } from '../config';
import type { RedirectResources } from '../deps';
import { buildDeps } from '../deps';

export const LINK_DOMAIN = 'links.test';

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

export interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** The redirect service in this process on 127.0.0.1:0, wired exactly as main.ts wires it. */
export async function startRedirect(env: Record<string, string> = {}): Promise<Harness> {
  const { databaseUrl, redisUrl, redisPrefix } = testEnvironment();
  const config = loadConfig({
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    REDIS_PREFIX: redisPrefix,
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
    get: (path, options) => send(port, path, options),
    cached: async (app, alias, environment = 'live') => {
      const ref = { subdomainKey: app.subdomainKey, environment, alias };
      const lookup = await eventually(
        () => cache.lookup(ref),
        (found) => found.kind === 'hit',
      );
      if (lookup.kind !== 'hit') throw new Error(`${alias} was never cached`);
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

export function send(port: number, path: string, options: RequestOptions = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: { ...(options.host ? { host: options.host } : {}), ...options.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

export interface TestApp {
  id: string;
  subdomainKey: string;
  /** `<key>.links.test` and `<key>-test.links.test`. */
  liveHost: string;
  testHost: string;
}

/** A fresh app (tenant) for one test, inserted as the operator CLI would. */
export async function createTestApp(db: Kysely<Database>): Promise<TestApp> {
  const id = newId('app');
  const subdomainKey = `r${randomBytes(5).toString('hex')}`;
  await db
    .insertInto('apps')
    .values({ id, name: `App ${subdomainKey}`, subdomain_key: subdomainKey })
    .execute();
  return {
    id,
    subdomainKey,
    liveHost: `${subdomainKey}.${LINK_DOMAIN}`,
    testHost: `${subdomainKey}-test.${LINK_DOMAIN}`,
  };
}

export interface TestLinkInput {
  alias?: string;
  environment?: Environment;
  webFallbackUrl?: string;
  iosFallbackUrl?: string | null;
  expiresAt?: Date | null;
  archivedAt?: Date | null;
}

export interface TestLink {
  id: string;
  alias: string;
  environment: Environment;
}

/** A link row as the worker writes it (callers invalidate the cache where the worker would). */
export async function createTestLink(
  db: Kysely<Database>,
  app: TestApp,
  input: TestLinkInput = {},
): Promise<TestLink> {
  const id = newId('lnk');
  const alias = input.alias ?? `a${randomBytes(5).toString('hex')}`;
  const environment = input.environment ?? 'live';
  await db
    .insertInto('links')
    .values({
      id,
      app_id: app.id,
      environment,
      alias,
      web_fallback_url: input.webFallbackUrl ?? 'https://example.com/web',
      ios_fallback_url: input.iosFallbackUrl ?? null,
      expires_at: input.expiresAt ?? null,
      archived_at: input.archivedAt ?? null,
    })
    .execute();
  return { id, alias, environment };
}

export async function clickCount(db: Kysely<Database>, linkId: string): Promise<number> {
  const row = await db
    .selectFrom('links')
    .select('click_count')
    .where('id', '=', linkId)
    .executeTakeFirstOrThrow();
  return row.click_count;
}

/** Polls `read` until `accept` holds or the deadline passes; returns the last value read. */
export async function eventually<T>(
  read: () => Promise<T>,
  accept: (value: T) => boolean,
  timeoutMs = 5_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!accept(value) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    value = await read();
  }
  return value;
}
