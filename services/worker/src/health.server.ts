import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { REQUEST_ID_HEADER, requestIdFrom } from '@linkservice/logger';

/** A probe that resolves when its dependency answers. */
export type ReadinessProbe = () => Promise<unknown>;

/** Bounded so a hung dependency fails /readyz instead of hanging it. */
export const READINESS_TIMEOUT_MS = 2_000;

export interface HealthServerOptions {
  probes: Record<string, ReadinessProbe>;
  isShuttingDown: () => boolean;
  timeoutMs?: number;
}

/**
 * The worker's only HTTP surface: `/healthz` (the process runs) and `/readyz` (Postgres and
 * Redis answer, and it is not shutting down). Plain node:http; bodies are the same small JSON
 * the other services answer.
 */
export function createHealthServer(options: HealthServerOptions): Server {
  const timeoutMs = options.timeoutMs ?? READINESS_TIMEOUT_MS;
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
    void checkAll(options.probes, timeoutMs).then((down) => {
      if (down.length === 0) send(200, { status: 'ready' });
      else
        send(503, {
          error: 'unavailable',
          message: `Not ready: ${down.join(', ')} did not answer.`,
        });
    });
  });
}

/** Names of the probes that failed or did not answer within `timeoutMs`. */
async function checkAll(
  probes: Record<string, ReadinessProbe>,
  timeoutMs: number,
): Promise<string[]> {
  const outcomes = await Promise.all(
    Object.entries(probes).map(async ([name, probe]) => {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<false>((resolve) => {
        timer = setTimeout(() => {
          resolve(false);
        }, timeoutMs);
      });
      const answered = probe().then(
        () => true,
        () => false,
      );
      const ok = await Promise.race([answered, timeout]);
      clearTimeout(timer);
      return ok ? undefined : name;
    }),
  );
  return outcomes.filter((name): name is string => name !== undefined);
}
