import { once } from 'node:events';
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createLogger } from '@linkservice/logger';
import { closeServerWithin } from './http-server';

function capturingLogger() {
  const messages: string[] = [];
  const logger = createLogger('lifecycle-test', 'info', {
    write: (line: string) => {
      messages.push((JSON.parse(line) as { msg: string }).msg);
    },
  });
  return { logger, messages };
}

async function listening(onRequest: Parameters<typeof createServer>[1]) {
  const server = createServer(onRequest);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, port: (server.address() as AddressInfo).port };
}

describe('closeServerWithin', () => {
  it('resolves once the server is idle, without cutting anything', async () => {
    const { server } = await listening((_req, res) => res.end());
    const { logger, messages } = capturingLogger();
    await closeServerWithin(server, 60_000, logger);
    expect(server.listening).toBe(false);
    expect(messages).toEqual([]);
  });

  it('cuts a request still open when the grace period ends', async () => {
    const { server, port } = await listening(() => undefined); // never answers
    const { logger, messages } = capturingLogger();
    const req = request({ host: '127.0.0.1', port, path: '/' });
    const failed = once(req, 'error');
    req.end();
    await once(server, 'request');

    const started = Date.now();
    await closeServerWithin(server, 100, logger);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(messages).toEqual(['grace period over: closing the remaining connections']);
    const [error] = (await failed) as [NodeJS.ErrnoException];
    expect(error.code).toBe('ECONNRESET');
  });
});
