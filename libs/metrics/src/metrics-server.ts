import { once } from 'node:events';
import { createServer } from 'node:http';
import type { Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { StartedService } from '@linkservice/lifecycle';
import type { Logger } from '@linkservice/logger';
import type { Registry } from 'prom-client';
import { collectProcessMetrics } from './registry';

export const METRICS_PATH = '/metrics';

export interface MetricsServer {
  server: Server;
  /** The port it listens on (METRICS_PORT, or the one picked for 0). */
  port: number;
  /** Stops listening and cuts open scrapes at once: a scrape never holds a stopping process. */
  close(): void;
}

export interface MetricsServerOptions {
  port: number;
  logger: Logger;
}

function sendText(
  res: ServerResponse,
  status: number,
  body: string,
  contentType = 'text/plain; charset=utf-8',
): void {
  res.writeHead(status, {
    'Content-Type': contentType,
    'Content-Length': Buffer.byteLength(body),
    'Cache-Control': 'no-store',
  });
  res.end(body);
}

/**
 * Prometheus' scrape target, on a port of its own (never the API's: scrapes stay off the public
 * listener and its request metrics): `GET /metrics` in the text format, 404 for any other path,
 * 405 for any other method. Adds Node's process metrics to the registry.
 */
export async function startMetricsServer(
  registry: Registry,
  { port, logger }: MetricsServerOptions,
): Promise<MetricsServer> {
  collectProcessMetrics(registry);
  const server = createServer((req, res) => {
    const path = (req.url ?? '/').split('?', 1)[0];
    if (path !== METRICS_PATH) {
      sendText(res, 404, 'Not found: metrics are at /metrics.\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.setHeader('Allow', 'GET, HEAD');
      sendText(res, 405, 'Use GET.\n');
      return;
    }
    registry.metrics().then(
      (text) => {
        sendText(res, 200, text, registry.contentType);
      },
      (error: unknown) => {
        logger.warn({ err: error }, 'metrics scrape failed');
        sendText(res, 500, 'Metrics could not be collected.\n');
      },
    );
  });
  server.listen(port);
  await once(server, 'listening');
  const actual = (server.address() as AddressInfo).port;
  logger.info({ port: actual }, 'metrics listening');
  return {
    server,
    port: actual,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}

/**
 * The service's start with the metrics server beside it: still scraped while the service drains
 * (a stopping pod's last numbers count too), closed once the drain is over.
 */
export function alongsideMetrics(started: StartedService, metrics: MetricsServer): StartedService {
  return {
    intake: started.intake,
    ports: { ...started.ports, metrics: metrics.port },
    stop: async (graceMs) => {
      try {
        return await started.stop(graceMs);
      } finally {
        metrics.close();
      }
    },
  };
}
