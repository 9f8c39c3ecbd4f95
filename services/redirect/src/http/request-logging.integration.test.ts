import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { createLogger } from '@linkservice/logger';
import { logRequestAtDebug } from './request-logging';

async function serveWith(level: 'debug' | 'info') {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  const logger = createLogger('redirect', level, stream);
  const server = createServer((req, res) => {
    logRequestAtDebug(logger, false, req, res, 'rid-1');
    res.writeHead(302, { Location: 'https://example.com/' }).end();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return { lines, port, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe('redirect request lines', () => {
  it('at debug: method, host, path and status, never the query or the user agent', async () => {
    const served = await serveWith('debug');
    const res = await fetch(`http://127.0.0.1:${served.port}/promo?ls_click=secret-token&x=1`, {
      redirect: 'manual',
      headers: { 'user-agent': 'probe-agent/1' },
    });
    expect(res.status).toBe(302);
    await served.close();
    expect(served.lines).toHaveLength(1);
    expect(served.lines[0]).toMatchObject({
      level: 'debug',
      reqId: 'rid-1',
      method: 'GET',
      host: `127.0.0.1:${served.port}`,
      path: '/promo',
      status: 302,
    });
    expect(typeof served.lines[0]?.durationMs).toBe('number');
    const text = JSON.stringify(served.lines);
    expect(text).not.toContain('secret-token');
    expect(text).not.toContain('probe-agent');
  });

  it('writes nothing at info', async () => {
    const served = await serveWith('info');
    await fetch(`http://127.0.0.1:${served.port}/promo`, { redirect: 'manual' });
    await served.close();
    expect(served.lines).toHaveLength(0);
  });
});
