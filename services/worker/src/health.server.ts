import { createServer } from 'node:http';
import type { Server } from 'node:http';
import type { ReadinessProbe } from '@linkservice/lifecycle';
import { checkReadiness } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import { REQUEST_ID_HEADER, requestIdFrom } from '@linkservice/logger';

export interface HealthServerOptions {
  probes: Record<string, ReadinessProbe>;
  isShuttingDown: () => boolean;
  /** Per probe; READINESS_TIMEOUT_MS by default. */
  timeoutMs?: number;
  /** Told why /readyz failed (clients only learn which dependency). */
  logger?: Logger;
}

/**
 * The worker's only HTTP surface: `/healthz` (the process runs) and `/readyz` (Postgres and
 * Redis answer, and it is not shutting down). Plain node:http; bodies are the same small JSON
 * the other services answer.
 */
export function createHealthServer(options: HealthServerOptions): Server {
  return createServer((req, res) => {
    res.setHeader(REQUEST_ID_HEADER, requestIdFrom(req.headers['x-request-id']));
    const send = (status: number, body: unknown, headers: Record<string, string> = {}): void => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const path = new URL(req.url ?? '/', 'http://worker').pathname;
    if (path !== '/healthz' && path !== '/readyz') {
      send(404, { error: 'not_found', message: 'No such path.' });
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(405, { error: 'method_not_allowed', message: 'Use GET.' }, { allow: 'GET, HEAD' });
      return;
    }
    if (path === '/healthz') {
      send(200, { status: 'ok' });
      return;
    }
    if (options.isShuttingDown()) {
      send(503, { error: 'unavailable', message: 'Shutting down.' });
      return;
    }
    void checkReadiness(options.probes, options.timeoutMs).then(({ ready, failures }) => {
      if (ready) {
        send(200, { status: 'ready' });
        return;
      }
      options.logger?.warn({ failures }, 'not ready');
      const down = failures.map((failure) => failure.dependency).join(', ');
      send(503, { error: 'unavailable', message: `Not ready: ${down} did not answer.` });
    });
  });
}
