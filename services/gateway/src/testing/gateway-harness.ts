import { once } from 'node:events';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@linkservice/logger';
import type { RedisClient } from '@linkservice/lifecycle';
import type { ApiBody, ApiResponse, HttpRequest, Tenant } from '@linkservice/testing';
import { createTenant, methodOf, OpenApiConformance, sendRequest } from '@linkservice/testing';
import { apiRoutes, createApp } from '../app';
import type { GatewayConfig } from '../config';
import { loadConfig } from '../config';
import type { GatewayClients, GatewayDeps } from '../deps';
import { buildDeps } from '../deps';
import type { ApiRoute } from '../http/routes';
import { API_BASE_PATH } from '../app';
import { apiDocument } from '../openapi/api-document';

type LogLevel = GatewayConfig['LOG_LEVEL'];

export interface StartGatewayOptions {
  /** Variables on top of the test run's environment (DATABASE_URL, REDIS_URL... already set). */
  env?: Record<string, string | undefined>;
  /** Default: LOG_LEVEL of the run (silent unless TEST_LOG_LEVEL says otherwise). */
  logLevel?: LogLevel;
  /**
   * Swap clients before buildDeps builds the services over them (e.g. a dead Redis, a Kysely
   * with a plugin): the app is then wired exactly as main.ts wires it, around those clients.
   */
  deps?: (clients: GatewayClients) => GatewayClients;
  /** The /api/v1 routes to mount, given the deps and the default list (apiRoutes(deps)). */
  routes?: (deps: GatewayDeps, defaults: ApiRoute[]) => ApiRoute[];
}

export interface TestGateway {
  /** e.g. http://127.0.0.1:40123 */
  baseUrl: string;
  deps: GatewayDeps;
  /** Every log line the gateway wrote (JSON text), at `logLevel`. */
  logs: string[];
  /**
   * `path` is absolute: `/api/v1/app`, `/readyz`. Every /api/v1 answer is checked against the
   * API document (a test's own extra routes excepted): one it does not describe fails the test.
   */
  api(path: string, request?: HttpRequest): Promise<ApiResponse>;
  stop(): Promise<void>;
}

/** Resolves once the client is ready, or has failed to connect once (a Redis a test made away). */
async function connectedOrFailed(redis: RedisClient): Promise<void> {
  if (redis.status === 'ready') return;
  const settled = new AbortController();
  await Promise.race(
    ['ready', 'error', 'end'].map((event) =>
      once(redis, event, { signal: settled.signal }).catch(() => undefined),
    ),
  );
  settled.abort();
}

/**
 * Starts the real gateway in-process on an ephemeral port, with real Postgres and Redis (the
 * run's database and prefix from global-setup), exactly as main.ts wires it.
 */
export async function startGateway(options: StartGatewayOptions = {}): Promise<TestGateway> {
  const config = loadConfig({ ...process.env, ...options.env });
  const logs: string[] = [];
  const logger = createLogger('gateway', options.logLevel ?? config.LOG_LEVEL, {
    write: (line: string) => {
      logs.push(line);
    },
  });
  let opened: GatewayClients | undefined;
  const resources = buildDeps(config, logger, {
    clients: (clients) => {
      opened = clients;
      return options.deps ? options.deps(clients) : clients;
    },
  });
  const { deps } = resources;
  // The rate limiters fail at once while Redis is not ready (503, as /readyz would say), and a
  // command queued while it connects fails at REDIS_COMMAND_TIMEOUT_MS: a request sent the moment
  // the gateway started must not race its connection. Waits on the client opened here, which a
  // test's swap may wrap; a client a test swapped in instead is left alone (it may be meant
  // never to connect), and a Redis that cannot be reached ends the wait at its first error.
  if (opened) await connectedOrFailed(opened.redis);
  const defaults = apiRoutes(deps);
  const routes = options.routes?.(deps, defaults);
  const conformance = new OpenApiConformance(documentOfCode(), {
    skip: testOnlyRoutes(routes?.filter((route) => !defaults.includes(route)) ?? []),
  });
  const server: Server = createServer(createApp(deps, { routes }));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    baseUrl,
    deps,
    logs,
    api: async (path, request) => {
      const res = await sendRequest<ApiBody>(`${baseUrl}${path}`, request);
      conformance.check({ method: methodOf(request), path, ...res });
      return res;
    },
    stop: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => {
        server.close((error) => {
          if (error) reject(error);
          else resolve();
        });
      });
      await resources.close();
    },
  };
}

let document: object | undefined;

/** The document the code generates (the committed file is checked against it elsewhere). */
function documentOfCode(): object {
  return (document ??= apiDocument());
}

/** Routes a test mounted beside the real ones: not the contract, so their answers are not checked. */
function testOnlyRoutes(routes: readonly ApiRoute[]) {
  const patterns = routes.map((route) => ({
    pattern: new RegExp(`^${API_BASE_PATH}${route.path.replace(/:\w+/g, '[^/]+')}$`),
  }));
  return (_method: string, path: string) =>
    // Any method: the 405 a test's own path answers to another method is not the document's.
    patterns.some((route) => route.pattern.test(path));
}

/** A started gateway and two apps to tell apart: what tenant-isolation tests start from. */
export interface GatewayWithTenants {
  gateway: TestGateway;
  /** "Alpha" and "Beta", each with a secret and a publishable key per environment. */
  alpha: Tenant;
  beta: Tenant;
}

/** startGateway(options), then two tenants, Alpha and Beta, in its database. */
export async function startGatewayWithTenants(
  options: StartGatewayOptions = {},
): Promise<GatewayWithTenants> {
  const gateway = await startGateway(options);
  const [alpha, beta] = await Promise.all([
    createTenant(gateway.deps.db, { name: 'Alpha' }),
    createTenant(gateway.deps.db, { name: 'Beta' }),
  ]);
  return { gateway, alpha, beta };
}
