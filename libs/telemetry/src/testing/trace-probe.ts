// Telemetry first, exactly as in the services: the instrumentations patch only what loads later.
import { telemetry } from './trace-probe.instrument';
import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { trace } from '@opentelemetry/api';
import { Redis } from 'ioredis';
import pg from 'pg';

/**
 * Run by telemetry.e2e.test.ts as a compiled process with OTEL_TRACES_EXPORTER=console: sends
 * TRACE_PROBE_SECRET through everything the services trace (an HTTP request's Authorization
 * header, a Postgres parameter, Redis command arguments) inside one traced operation, then
 * flushes the spans to stdout for the test to search. It also calls the two probe paths, whose
 * server side must leave no span.
 */
async function main(): Promise<void> {
  const { TRACE_PROBE_SECRET: secret, DATABASE_URL, REDIS_URL, REDIS_PREFIX } = process.env;
  if (!secret || !DATABASE_URL || !REDIS_URL || !REDIS_PREFIX) {
    throw new Error('trace-probe needs TRACE_PROBE_SECRET, DATABASE_URL, REDIS_URL, REDIS_PREFIX');
  }
  const server = createServer((_req, res) => {
    res.end('ok');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const redis = new Redis(REDIS_URL);
  const pool = new pg.Pool({ connectionString: DATABASE_URL, max: 1 });

  // ioredis spans need a parent span (requireParentSpan), as a request's span is in a service.
  await trace.getTracer('trace-probe').startActiveSpan('probe', async (span) => {
    const get = (path: string, headers: Record<string, string> = {}) =>
      new Promise<void>((resolve, reject) => {
        const req = request({ port, path, headers }, (res) => {
          res.resume();
          res.on('end', resolve);
        });
        req.on('error', reject);
        req.end();
      });
    await get('/api/v1/app', { authorization: `Bearer ${secret}` });
    // An install's id must not reach a span either (app-interface.md): TRACE_PROBE_INSTALL_ID.
    await get(`/api/v1/sdk/installs/${process.env.TRACE_PROBE_INSTALL_ID}?x=1`);
    await get('/healthz');
    await get('/readyz');
    await pool.query('SELECT $1::text AS value', [secret]);
    const key = `${REDIS_PREFIX}:trace-probe`;
    // BullMQ adds and finishes jobs with EVALSHA: the same serializer path as EVAL.
    await redis.eval('return ARGV[1]', 0, secret);
    await redis.set(key, secret, 'PX', 60_000);
    await redis.hincrby(`${key}:hash`, secret, 1);
    await redis.unlink(key, `${key}:hash`);
    span.end();
  });

  await redis.quit();
  await pool.end();
  server.close();
  await telemetry.shutdown();
}

main().catch((error: unknown) => {
  process.stderr.write(`trace-probe: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
