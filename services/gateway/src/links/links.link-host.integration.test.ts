import { once } from 'node:events';
import type { Server } from 'node:http';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { LinkRef } from '@linkservice/link-cache';
import { LinkCache } from '@linkservice/link-cache';
import { createLogger } from '@linkservice/logger';
import type { RedirectResources } from '@linkservice/redirect';
import { buildDeps, createApp, loadConfig } from '@linkservice/redirect';
import type { Tenant } from '@linkservice/testing';
import { createTenant, eventually } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';
import { insertLink } from '@linkservice/testing';

// PATCH and DELETE against the link host's cache: the gateway and the redirect service run
// in-process on the run's Postgres and Redis, and the redirect after a change must show it.

const DOMAIN = 'go.example.test';
const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15';

let gateway: TestGateway;
let redirect: { resources: RedirectResources; server: Server; port: number };
let cache: LinkCache;
let tenant: Tenant;

beforeAll(async () => {
  gateway = await startGateway({ env: { LINK_DOMAIN: DOMAIN } });
  const config = loadConfig({
    ...process.env,
    LINK_DOMAIN: DOMAIN,
    CLICK_FLUSH_INTERVAL_MS: '600000',
  });
  const resources = buildDeps(config, createLogger('redirect', 'silent'));
  if (resources.deps.redis.status !== 'ready') await once(resources.deps.redis, 'ready');
  const server = createServer(createApp(resources.deps, { isShuttingDown: () => false }));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  redirect = { resources, server, port: (server.address() as AddressInfo).port };
  cache = new LinkCache(resources.deps.redis, config.REDIS_PREFIX);
  tenant = await createTenant(gateway.deps.db);
});
afterAll(async () => {
  await new Promise<void>((resolve) =>
    redirect.server.close(() => {
      resolve();
    }),
  );
  await redirect.resources.close();
  await gateway.stop();
});

/** GET https://<subdomainKey>.<domain>/<alias> on the link host. */
function open(alias: string, userAgent?: string): Promise<{ status: number; location?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: redirect.port,
        path: `/${alias}`,
        headers: {
          host: `${tenant.subdomainKey}.${DOMAIN}`,
          ...(userAgent ? { 'user-agent': userAgent } : {}),
        },
        agent: false,
      },
      (res) => {
        res.resume();
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, location: res.headers.location });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function refOf(alias: string): LinkRef {
  return { subdomainKey: tenant.subdomainKey, environment: 'live', alias };
}

/** The link host fills its cache after answering; wait for it so the next answer is cached. */
function cached(alias: string) {
  return eventually(
    async () => {
      const lookup = await cache.lookup(refOf(alias));
      // A cached miss is a hit with resolution null: a value, so polling stops there too.
      return lookup.kind === 'hit' && lookup.resolution;
    },
    { timeoutMs: 5_000, intervalMs: 20, what: `${alias} being cached` },
  );
}

describe('changes through the API reach the link host on the very next redirect', () => {
  it('PATCH of the fallback URLs', async () => {
    const link = await insertLink(
      gateway.deps.db,
      { appId: tenant.appId, environment: 'live' },
      { web_fallback_url: 'https://example.com/before' },
    );
    expect(await open(link.alias)).toEqual({ status: 302, location: 'https://example.com/before' });
    await cached(link.alias);

    const patched = await gateway.api(`/api/v1/links/${link.id}`, {
      key: tenant.live.secret,
      method: 'PATCH',
      body: { webFallbackUrl: 'https://example.com/after', iosFallbackUrl: 'https://ios.example' },
    });
    expect(patched.status).toBe(200);

    expect(await open(link.alias)).toEqual({ status: 302, location: 'https://example.com/after' });
    expect(await open(link.alias, IPHONE)).toEqual({
      status: 302,
      location: 'https://ios.example',
    });
  });

  it('DELETE (archive): the link keeps redirecting, now as archived', async () => {
    const link = await insertLink(
      gateway.deps.db,
      { appId: tenant.appId, environment: 'live' },
      { web_fallback_url: 'https://example.com/kept' },
    );
    await open(link.alias);
    expect(await cached(link.alias)).toMatchObject({ archived: false });

    const archived = await gateway.api(`/api/v1/links/${link.id}`, {
      key: tenant.live.secret,
      method: 'DELETE',
    });
    expect(archived.status).toBe(200);
    expect((await cache.lookup(refOf(link.alias))).kind).toBe('miss');

    expect(await open(link.alias)).toEqual({ status: 302, location: 'https://example.com/kept' });
    expect(await cached(link.alias)).toMatchObject({ archived: true });
  });

  it('a PATCH that changes nothing and a refused PATCH leave the cache alone', async () => {
    const link = await insertLink(gateway.deps.db, { appId: tenant.appId, environment: 'live' });
    await open(link.alias);
    await cached(link.alias);
    const empty = await gateway.api(`/api/v1/links/${link.id}`, {
      key: tenant.live.secret,
      method: 'PATCH',
      body: {},
    });
    expect(empty.status).toBe(200);
    const invalid = await gateway.api(`/api/v1/links/${link.id}`, {
      key: tenant.live.secret,
      method: 'PATCH',
      body: { webFallbackUrl: 'not a url' },
    });
    expect(invalid.status).toBe(422);
    expect((await cache.lookup(refOf(link.alias))).kind).toBe('hit');
  });
});
