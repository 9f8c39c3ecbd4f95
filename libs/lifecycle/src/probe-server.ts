import { createServer } from 'node:http';
import type { Server } from 'node:http';
import { REQUEST_ID_HEADER, requestIdFrom } from '@linkservice/logger';
import { answerClientErrors } from './client-errors';
import type { ProbeOptions } from './probes';
import { createProbes, sendProbeJson } from './probes';

/**
 * For a service without an HTTP surface of its own (the worker): /healthz and /readyz on a port
 * of their own, 404 for any other path, 405 for any other method. Not listening yet.
 */
export function createProbeServer(options: ProbeOptions): Server {
  const probes = createProbes(options);
  const server = createServer((req, res) => {
    res.setHeader(REQUEST_ID_HEADER, requestIdFrom(req.headers['x-request-id']));
    const path = new URL(req.url ?? '/', 'http://probe').pathname;
    const probe =
      path === '/healthz' ? probes.healthz : path === '/readyz' ? probes.readyz : undefined;
    if (!probe) {
      sendProbeJson(res, 404, { error: 'not_found', message: 'No such path.' });
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      sendProbeJson(
        res,
        405,
        { error: 'method_not_allowed', message: 'Use GET.' },
        { Allow: 'GET, HEAD' },
      );
      return;
    }
    void probe(req, res);
  });
  answerClientErrors(server);
  return server;
}
