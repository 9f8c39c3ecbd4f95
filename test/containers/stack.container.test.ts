import { createPublicKey, randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { generateReceiptSigningKey } from '@linkservice/keys';
import type { ApiResponse } from '@linkservice/testing';
import { eventually, freePort, linkOf, sendRequest } from '@linkservice/testing';
import { repositoryRoot } from '../support/service-process';
import { sendApiRequest } from '../support/stack';
import { ComposeStack, docker, oneOff } from './compose-stack';

/**
 * The container image as operators run it: deploy/docker-compose.yml started from the built
 * image (LINKSERVICE_IMAGE, default linkservice:local) against containerised Postgres and Redis,
 * every application container hardened as the chart runs it. A customer's smoke test goes through
 * it (operator CLI, create, batch, read, redirect, receipts), then every service is stopped with
 * SIGTERM while work is in flight. Run by `pnpm test:containers` with a container engine (CI sets
 * one up with ../shared/tools/container-engine/setup and builds the image first).
 */

jest.setTimeout(300_000);

const IMAGE = process.env.LINKSERVICE_IMAGE ?? 'linkservice:local';
const SERVICES = ['gateway', 'worker', 'redirect'] as const;
const LINK_DOMAIN = 'links.localhost';

let stack: ComposeStack;
let gatewayUrl: string;
let redirectUrl: string;
let secret: string;
let subdomainKey: string;
const signingKey = generateReceiptSigningKey();

function api(method: string, path: string, body?: unknown): Promise<ApiResponse> {
  return sendApiRequest(`${gatewayUrl}/api/v1${path}`, { method, key: secret, body });
}

/** `docker compose run --rm gateway linkctl …`, as deploy/README.md shows operators. */
async function linkctl(...args: string[]): Promise<Record<string, unknown>> {
  return JSON.parse(await stack.run('gateway', ['linkctl', ...args, '--json'])) as Record<
    string,
    unknown
  >;
}

beforeAll(async () => {
  const [gatewayPort, redirectPort] = [await freePort(), await freePort()];
  stack = await ComposeStack.load({
    composeFile: join(repositoryRoot(), 'deploy', 'docker-compose.yml'),
    projectName: `lsct-${randomBytes(3).toString('hex')}`,
    env: {
      LINKSERVICE_IMAGE: IMAGE,
      GATEWAY_HOST_PORT: `127.0.0.1:${gatewayPort}`,
      REDIRECT_HOST_PORT: `127.0.0.1:${redirectPort}`,
      RECEIPT_SIGNING_KEY: signingKey,
      LINK_DOMAIN,
    },
    log: (line) => process.stderr.write(`[compose] ${line}\n`),
  });
  await stack.up();
  for (const service of SERVICES) await stack.waitHealthy(service);
  gatewayUrl = `http://127.0.0.1:${await stack.hostPort('gateway', 8080)}`;
  redirectUrl = `http://127.0.0.1:${await stack.hostPort('redirect', 8081)}`;
});

afterAll(async () => {
  await (stack as ComposeStack | undefined)?.down();
});

describe('the image, as compose runs it', () => {
  it('runs every service on Node 24 LTS, hardened as the chart runs it', async () => {
    for (const service of SERVICES) {
      const container = stack.containerOf(service);
      const version = await docker(['exec', container, 'node', '--version']);
      process.stderr.write(`[compose] ${service}: node --version ${version}\n`);
      expect({ service, version }).toEqual({ service, version: expect.stringMatching(/^v24\./) });
      expect(await docker(['exec', container, 'id', '-u'])).toBe('10001');

      const state = await stack.inspect(service);
      expect({ service, readOnly: state.HostConfig.ReadonlyRootfs }).toEqual({
        service,
        readOnly: true,
      });
      expect(state.Config.User).toBe('10001:10001');
      expect(state.HostConfig.SecurityOpt ?? []).toContainEqual(
        expect.stringMatching(/^no-new-privileges/),
      );
      // No capability is left: the process's effective and bounding sets are empty.
      const status = await docker(['exec', container, 'cat', '/proc/1/status']);
      expect(/^CapEff:\s*([0-9a-f]+)$/m.exec(status)?.[1]).toMatch(/^0+$/);
      expect(/^CapBnd:\s*([0-9a-f]+)$/m.exec(status)?.[1]).toMatch(/^0+$/);
      // /tmp, the one writable place, is a tmpfs.
      await docker(['exec', container, 'touch', '/tmp/written']);
    }
  });

  it('refuses to start the production gateway without a receipt signing key', async () => {
    let failure: { code?: unknown; stderr?: string } = {};
    await oneOff(['--read-only', '--cap-drop', 'ALL', IMAGE, 'gateway']).catch((error: unknown) => {
      failure = error as typeof failure;
    });
    expect(failure.code).toBe(78);
    expect(failure.stderr).toContain('RECEIPT_SIGNING_KEY: is required');
  });

  it('serves a customer end to end: operator CLI, create, batch, read, redirect, receipts', async () => {
    subdomainKey = `ct${randomBytes(4).toString('hex')}`;
    const made = (await linkctl(
      'app',
      'create',
      '--name',
      'Container Co',
      '--subdomain',
      subdomainKey,
    )) as { app: { id: string } };
    const key = await linkctl('key', 'create', '--app', made.app.id, '--env', 'live');
    secret = String(key.secret);

    const created = await api('POST', '/links', {
      alias: 'spring',
      webFallbackUrl: 'https://example.com/spring',
      deepLinkData: { screen: 'promo' },
    });
    expect(created.status).toBe(201);
    const link = linkOf(created);
    expect(link.url).toBe(`https://${subdomainKey}.${LINK_DOMAIN}/spring`);

    const batch = await api('POST', '/links/batch', {
      links: [1, 2, 3].map((n) => ({ webFallbackUrl: `https://example.com/${n}` })),
    });
    expect(batch.status).toBe(201);

    const read = await api('GET', `/links/${link.id}`);
    expect(read.status).toBe(200);
    expect(linkOf(read).deepLinkData).toEqual({ screen: 'promo' });

    const tap = await sendRequest(`${redirectUrl}/spring?utm_source=mail`, {
      host: `${subdomainKey}.${LINK_DOMAIN}`,
    });
    expect(tap.status).toBe(302);
    expect(tap.headers.get('location')).toBe('https://example.com/spring?utm_source=mail');
    await eventually(async () => linkOf(await api('GET', `/links/${link.id}`)).clickCount === 1, {
      timeoutMs: 10_000,
      what: 'the click counted',
    });

    const jwks = await sendRequest(`${gatewayUrl}/.well-known/jwks.json`);
    const { keys } = jwks.body as { keys: { x: string }[] };
    expect(keys.map((k) => k.x)).toEqual([createPublicKey(signingKey).export({ format: 'jwk' }).x]);
  });

  /** Creation requests in the waiting jobs: a group job carries `requests`, an older one is one. */
  const WAITING_REQUESTS = `
    local n = 0
    for _, id in ipairs(redis.call('LRANGE', KEYS[1], 0, -1)) do
      local data = cjson.decode(redis.call('HGET', KEYS[2] .. id, 'data'))
      n = n + (data.requests and #data.requests or 1)
    end
    return n`;

  it('drains the gateway on SIGTERM: creations in flight when it arrives are all answered', async () => {
    // The worker frozen, creations wait in the gateway for their results: in flight for sure.
    const worker = stack.containerOf('worker');
    await docker(['pause', worker]);
    const inFlight = Array.from({ length: 20 }, (_, n) =>
      (n % 4 === 0
        ? api('POST', '/links/batch', {
            links: [1, 2, 3].map((m) => ({ webFallbackUrl: `https://example.com/${n}/${m}` })),
          })
        : api('POST', '/links', { webFallbackUrl: `https://example.com/drain/${n}` })
      ).then((res) => ({ status: res.status, answeredAt: Date.now() })),
    );
    // Every one of them is in a job waiting in the queue (group commit puts several in one): the
    // gateway holds all 20 requests.
    await eventually(
      async () =>
        (await docker([
          'exec',
          stack.containerOf('redis'),
          'redis-cli',
          'EVAL',
          WAITING_REQUESTS,
          '2',
          'ls:link-creations:wait',
          'ls:link-creations:',
        ])) === '20',
      { timeoutMs: 10_000, what: '20 creations waiting for the frozen worker' },
    );
    // docker stop: SIGTERM, as an orchestrator sends it (a restart policy leaves it stopped).
    const signalledAt = Date.now();
    const stopped = stack.stop('gateway');
    await eventually(async () => /"msg":"shutting down/.test(await stack.logs('gateway')), {
      timeoutMs: 10_000,
      what: 'the gateway shutting down',
    });
    await docker(['unpause', worker]);

    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.status).filter((status) => status !== 201)).toEqual([]);
    expect(answers.every((a) => a.answeredAt > signalledAt)).toBe(true);
    await stopped;
    expect((await stack.inspect('gateway')).State.Status).toBe('exited');
    expect((await stack.inspect('gateway')).State.ExitCode).toBe(0);
    expect(await stack.logs('gateway')).toMatch(/"msg":"shutting down: no longer accepting[^"]*"/);
  });

  it('stops the worker and the link host cleanly on SIGTERM', async () => {
    for (const service of ['worker', 'redirect']) {
      await stack.stop(service);
      const { State } = await stack.inspect(service);
      expect({ service, status: State.Status, exitCode: State.ExitCode }).toEqual({
        service,
        status: 'exited',
        exitCode: 0,
      });
      expect(await stack.logs(service)).toMatch(/"msg":"stopped"/);
    }
  });
});
