import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { createLogger } from '@linkservice/logger';
import { createProbes } from './probes';

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: unknown;
}

/** Just enough of node's request and response for the handlers: no socket. */
function exchange(
  requestHeaders: Record<string, string> = {},
  preset: Record<string, string> = {},
) {
  const headers: Record<string, unknown> = { ...preset };
  const answer: Answer = { status: 0, headers, body: undefined };
  const res = {
    getHeader: (name: string) => headers[name.toLowerCase()],
    setHeader: (name: string, value: string) => {
      headers[name.toLowerCase()] = value;
    },
    writeHead: (status: number, more: OutgoingHttpHeaders) => {
      answer.status = status;
      for (const [name, value] of Object.entries(more)) headers[name.toLowerCase()] = value;
    },
    end: (body: Buffer) => {
      answer.body = JSON.parse(body.toString('utf8'));
    },
  };
  const req = { headers: requestHeaders };
  return {
    req: req as unknown as IncomingMessage,
    res: res as unknown as ServerResponse,
    answer,
  };
}

const logger = createLogger('lifecycle-test', 'silent');
const ok = () => Promise.resolve();

async function readyzAnswer(probes: ReturnType<typeof createProbes>): Promise<Answer> {
  const ready = exchange();
  await probes.readyz(ready.req, ready.res);
  return ready.answer;
}

/** The 503 /readyz gives while it is not ready, with the reason it tells the caller. */
function unavailable(message: string) {
  return { status: 503, headers: { 'retry-after': '5' }, body: { error: 'unavailable', message } };
}

describe('createProbes', () => {
  it('answers /healthz and a ready /readyz', async () => {
    const probes = createProbes({ probes: { postgres: ok }, isShuttingDown: () => false, logger });
    const health = exchange();
    await probes.healthz(health.req, health.res);
    expect(health.answer).toMatchObject({ status: 200, body: { status: 'ok' } });
    expect(await readyzAnswer(probes)).toMatchObject({ status: 200, body: { status: 'ready' } });
  });

  it('fails /readyz with Retry-After while shutting down, without probing', async () => {
    const probed: string[] = [];
    const probes = createProbes({
      probes: { postgres: () => Promise.resolve(probed.push('postgres')) },
      isShuttingDown: () => true,
      logger,
    });
    expect(await readyzAnswer(probes)).toMatchObject(unavailable('Shutting down.'));
    expect(probed).toEqual([]);
  });

  it('names the dependencies that failed, not why', async () => {
    const probes = createProbes({
      probes: {
        postgres: () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:5432')),
        redis: ok,
      },
      isShuttingDown: () => false,
      logger,
    });
    expect(await readyzAnswer(probes)).toMatchObject(
      unavailable('Not ready: postgres did not answer.'),
    );
  });

  it("keeps the request id the app already set, else takes the caller's", async () => {
    const probes = createProbes({ probes: {}, isShuttingDown: () => false, logger });
    const preset = exchange({ 'x-request-id': 'caller-1' }, { 'x-request-id': 'app-1' });
    await probes.healthz(preset.req, preset.res);
    expect(preset.answer.headers['x-request-id']).toBe('app-1');
    const own = exchange({ 'x-request-id': 'caller-1' });
    await probes.readyz(own.req, own.res);
    expect(own.answer.headers['x-request-id']).toBe('caller-1');
  });
});
