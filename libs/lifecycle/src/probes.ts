import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from '@linkservice/logger';
import { REQUEST_ID_HEADER, requestIdFrom } from '@linkservice/logger';
import type { ReadinessProbe } from './readiness';
import { checkReadiness } from './readiness';

/** What a 503 of /readyz tells the prober (and a client behind it) to wait before asking again. */
const RETRY_AFTER_SECONDS = '5';

export interface ProbeOptions {
  /** What /readyz checks, e.g. `{ postgres: () => ping(db), redis: () => redis.ping() }`. */
  probes: Record<string, ReadinessProbe>;
  /** True once shutdown began: /readyz then fails so traffic drains away, /healthz still answers. */
  isShuttingDown(): boolean;
  /** Told why /readyz failed (the prober only learns which dependency). */
  logger: Logger;
  /** Per probe; READINESS_TIMEOUT_MS by default. */
  timeoutMs?: number;
}

/** A node:http handler; express mounts it as a route handler as it is. */
export type ProbeHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export interface Probes {
  /** The process is alive and serves HTTP. */
  healthz: ProbeHandler;
  /** Every dependency answers in time, and the process is not shutting down. */
  readyz: ProbeHandler;
}

/** Probe answers carry the request id the app already set (the gateway's), or one of their own. */
function requestIdOf(req: IncomingMessage, res: ServerResponse): string {
  const set = res.getHeader(REQUEST_ID_HEADER);
  if (typeof set === 'string') return set;
  const id = requestIdFrom(req.headers['x-request-id']);
  res.setHeader(REQUEST_ID_HEADER, id);
  return id;
}

/** A probe answer (also the probe server's 404 and 405): small JSON, never cached. */
export function sendProbeJson(
  res: ServerResponse,
  status: number,
  value: unknown,
  extraHeaders: Record<string, string> = {},
): void {
  const body = Buffer.from(JSON.stringify(value));
  res.writeHead(status, {
    'Cache-Control': 'no-store',
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': body.length,
    'X-Content-Type-Options': 'nosniff',
    ...extraHeaders,
  });
  res.end(body);
}

function unavailable(res: ServerResponse, message: string): void {
  sendProbeJson(
    res,
    503,
    { error: 'unavailable', message },
    { 'Retry-After': RETRY_AFTER_SECONDS },
  );
}

/**
 * The one /healthz and /readyz of every service: the gateway mounts them as express routes, the
 * worker serves them alone (probe-server.ts), the link host on hosts that are not link hosts.
 * Bodies are the error contract's: `{ status }` when well, `{ error: 'unavailable', message }`
 * with Retry-After when not.
 */
export function createProbes(options: ProbeOptions): Probes {
  return {
    healthz: (req, res) => {
      requestIdOf(req, res);
      sendProbeJson(res, 200, { status: 'ok' });
      return Promise.resolve();
    },
    readyz: async (req, res) => {
      const reqId = requestIdOf(req, res);
      if (options.isShuttingDown()) {
        unavailable(res, 'Shutting down.');
        return;
      }
      const readiness = await checkReadiness(options.probes, options.timeoutMs);
      if (readiness.ready) {
        sendProbeJson(res, 200, { status: 'ready' });
        return;
      }
      options.logger.warn({ reqId, failures: readiness.failures }, 'not ready');
      const down = readiness.failures.map((failure) => failure.dependency).join(', ');
      unavailable(res, `Not ready: ${down} did not answer.`);
    },
  };
}
