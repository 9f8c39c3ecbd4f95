import { generatePublishableKey, generateSecretKey } from '@linkservice/keys';
import type { Tenant } from '@linkservice/testing';
import { createKey, createTenant, revokeKey } from '@linkservice/testing';
import type { TestGateway } from '../testing';
import { startGateway } from '../testing';

let gateway: TestGateway;
let tenant: Tenant;

beforeAll(async () => {
  gateway = await startGateway({
    logLevel: 'trace',
    routes: (_deps, defaults) => [
      ...defaults,
      {
        method: 'GET',
        path: '/throws',
        handler: () => {
          throw new Error('boom');
        },
      },
      {
        method: 'GET',
        path: '/logs',
        handler: (req, res) => {
          req.log.info({ step: 'handler' }, 'from the handler');
          res.json({ ok: true });
        },
      },
    ],
  });
  tenant = await createTenant(gateway.deps.db);
});
afterAll(async () => {
  await gateway.stop();
});

interface LogLine {
  level: string;
  msg?: string;
  step?: string;
  reqId?: string;
  err?: { message?: string; stack?: string };
  req?: { id: string; method: string; url: string; remoteAddress?: string; headers?: unknown };
  res?: { statusCode: number };
}

describe('request logs', () => {
  it('write one line per request, tagged with the request id, without headers', async () => {
    gateway.logs.length = 0;
    await gateway.api('/api/v1/app', {
      key: tenant.live.secret,
      headers: { 'x-request-id': 'log-1' },
    });
    const lines = gateway.logs.map((line) => JSON.parse(line) as LogLine);
    const done = lines.filter((line) => line.req?.id === 'log-1');
    expect(done).toHaveLength(1);
    expect(done[0]).toMatchObject({
      level: 'info',
      reqId: 'log-1',
      req: { method: 'GET', url: '/api/v1/app' },
      res: { statusCode: 200 },
    });
    expect(done[0].req!.headers).toBeUndefined();
  });

  it('never contain a key, secret or publishable, whatever happened to the request', async () => {
    const revoked = await createKey(gateway.deps.db, tenant.appId, 'test');
    await revokeKey(gateway.deps.db, revoked.id);
    const unknown = generateSecretKey('live');
    const secrets = [
      tenant.live.secret,
      tenant.test.secret,
      revoked.secret,
      unknown,
      tenant.publishable.live.secret,
      generatePublishableKey('test'),
    ];
    const paths = [
      '/api/v1/app',
      '/api/v1/nope',
      '/api/v1/throws',
      '/api/v1/sdk/resolve',
      '/api/v1/sdk/nope',
    ];

    gateway.logs.length = 0;
    for (const secret of secrets) {
      for (const path of paths) {
        await gateway.api(path, { key: secret });
        await gateway.api(path, { headers: { authorization: `bEaReR ${secret}` } });
        await gateway.api(path, { headers: { authorization: `Basic ${secret}` } });
        await gateway.api(path, { key: secret, method: 'POST', body: { secret } });
      }
    }
    // One line per request at least: nothing was filtered out to pass this test.
    expect(gateway.logs.length).toBeGreaterThanOrEqual(secrets.length * paths.length * 4);
    const everything = gateway.logs.join('\n');
    for (const secret of secrets) {
      // The random part alone must not appear either (e.g. a key split or re-encoded).
      expect(everything).not.toContain(secret.slice('ls_sk_live_'.length));
    }
    expect(everything).not.toMatch(/ls_[sp]k_(live|test)_/);
    expect(everything).not.toMatch(/authorization/i);
  });
});

describe('request logs of probes', () => {
  it('are debug when the probe answered', async () => {
    gateway.logs.length = 0;
    await gateway.api('/healthz', { headers: { 'x-request-id': 'probe-1' } });
    const lines = gateway.logs
      .map((line) => JSON.parse(line) as LogLine)
      .filter((line) => line.req?.id === 'probe-1');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'debug', res: { statusCode: 200 } });
  });
});

describe('request logs of handlers', () => {
  it("give a handler's own lines (req.log) the request id", async () => {
    gateway.logs.length = 0;
    const res = await gateway.api('/api/v1/logs', {
      key: tenant.live.secret,
      headers: { 'x-request-id': 'log-2' },
    });
    expect(res.status).toBe(200);
    const lines = gateway.logs.map((line) => JSON.parse(line) as LogLine);
    expect(lines.filter((line) => line.reqId === 'log-2')).toEqual([
      expect.objectContaining({ level: 'info', step: 'handler', msg: 'from the handler' }),
      expect.objectContaining({
        level: 'info',
        msg: 'request completed',
        res: { statusCode: 200 },
      }),
    ]);
  });
});

describe('the client address of a request log line', () => {
  const lineOf = (on: TestGateway, id: string) =>
    on.logs.map((line) => JSON.parse(line) as LogLine).find((line) => line.req?.id === id);

  it('is the peer, whatever X-Forwarded-For says, without TRUST_PROXY', async () => {
    await gateway.api('/api/v1/app', {
      key: tenant.live.secret,
      headers: { 'x-request-id': 'addr-1', 'x-forwarded-for': '203.0.113.5' },
    });
    expect(lineOf(gateway, 'addr-1')?.req?.remoteAddress).toBe('127.0.0.1');
  });

  it('is the forwarded client with TRUST_PROXY', async () => {
    const proxied = await startGateway({ logLevel: 'info', env: { TRUST_PROXY: 'true' } });
    try {
      await proxied.api('/api/v1/app', {
        key: tenant.live.secret,
        headers: { 'x-request-id': 'addr-2', 'x-forwarded-for': '203.0.113.5' },
      });
      expect(lineOf(proxied, 'addr-2')?.req?.remoteAddress).toBe('203.0.113.5');
    } finally {
      await proxied.stop();
    }
  });
});

describe('request logs at warn', () => {
  let quiet: TestGateway;
  beforeAll(async () => {
    quiet = await startGateway({
      logLevel: 'warn',
      routes: (_deps, defaults) => [
        ...defaults,
        {
          method: 'GET',
          path: '/throws',
          handler: () => {
            throw new Error('quiet boom');
          },
        },
      ],
    });
  });
  afterAll(async () => {
    await quiet.stop();
  });

  it('drop the lines of answered requests and keep a 500 in full', async () => {
    quiet.logs.length = 0;
    expect((await quiet.api('/api/v1/app', { key: tenant.live.secret })).status).toBe(200);
    expect((await quiet.api('/api/v1/nope', { key: tenant.live.secret })).status).toBe(404);
    expect((await quiet.api('/api/v1/app')).status).toBe(401);
    const failed = await quiet.api('/api/v1/throws', {
      key: tenant.live.secret,
      headers: { 'x-request-id': 'quiet-500' },
    });
    expect(failed.status).toBe(500);

    const lines = quiet.logs.map((line) => JSON.parse(line) as LogLine);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 'error',
      msg: 'request errored',
      reqId: 'quiet-500',
      req: { id: 'quiet-500', method: 'GET', url: '/api/v1/throws' },
      res: { statusCode: 500 },
      err: { message: 'quiet boom' },
    });
    expect(lines[0].err?.stack).toContain('quiet boom');
  });
});
