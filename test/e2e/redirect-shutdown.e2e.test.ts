import { Agent, request } from 'node:http';
import type { IncomingHttpHeaders } from 'node:http';
import { linkHostFor } from '@linkservice/contracts';
import { eventually, insertLink } from '@linkservice/testing';
import { useRunStack } from '../support/stack';
import { createTenant } from '../support/tenants';

/**
 * The link host stopped (SIGTERM) while busy keep-alive clients send redirect after redirect, as
 * a load balancer's connection pool does: every request it took is answered, the connections are
 * handed back with `Connection: close` instead of being kept (or reset) until the grace period
 * ends, and the process exits in a fraction of SHUTDOWN_GRACE_MS.
 */

const CLIENTS = 8;
const GRACE_MS = 10_000;
/** Each client's redirects before the signal, so every connection is kept alive and busy. */
const WARM_UP_REQUESTS = 20;

jest.setTimeout(60_000);

interface Answer {
  status: number;
  headers: IncomingHttpHeaders;
}

/** One GET on the client's own keep-alive agent; a failure carries whether the socket was reused. */
function redirect(agent: Agent, port: number, host: string, path: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path, agent, headers: { host } }, (res) => {
      res.resume();
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers });
      });
      res.on('error', reject);
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      reject(Object.assign(error, { reusedSocket: req.reusedSocket }));
    });
    req.end();
  });
}

interface ClientLog {
  answers: Answer[];
  /** How its loop ended: ECONNREFUSED (the server no longer listens) is the clean end. */
  ended: NodeJS.ErrnoException & { reusedSocket?: boolean };
}

const suite = useRunStack({
  services: ['redirect'],
  logLevel: 'info',
  serviceEnv: { redirect: { SHUTDOWN_GRACE_MS: String(GRACE_MS) } },
});

it('on SIGTERM answers every request it took, ends keep-alive and exits well within the grace', async () => {
  const tenant = await createTenant(suite.postgres.db);
  const link = await insertLink(suite.postgres.db, tenant);
  const host = linkHostFor(tenant.subdomainKey, 'live', suite.stack.linkDomain);
  const { port } = suite.stack.redirect;

  let warmedUp = 0;
  let allWarm: () => void = () => undefined;
  const warm = new Promise<void>((resolve) => (allWarm = resolve));
  const clients = Array.from({ length: CLIENTS }, async (): Promise<ClientLog> => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const answers: Answer[] = [];
    try {
      for (;;) {
        try {
          answers.push(await redirect(agent, port, host, `/${link.alias}`));
        } catch (error) {
          return { answers, ended: error as ClientLog['ended'] };
        }
        if (answers.length === WARM_UP_REQUESTS && ++warmedUp === CLIENTS) allWarm();
      }
    } finally {
      agent.destroy();
    }
  });

  await warm;
  const signalledAt = Date.now();
  suite.stack.redirect.kill('SIGTERM');
  const exit = await suite.stack.redirect.waitForExit(GRACE_MS + 5_000);
  const exitMs = Date.now() - signalledAt;
  const logs = await Promise.all(clients);

  expect(exit).toEqual({ code: 0, signal: null });
  // The drain ends with the last connection, not with the grace period.
  expect(exitMs).toBeLessThan(2_000);
  // No request was reset or cut: each loop ran until a new connection was refused.
  expect(logs.map((log) => `${log.ended.code} reused=${String(log.ended.reusedSocket)}`)).toEqual(
    Array.from({ length: CLIENTS }, () => 'ECONNREFUSED reused=false'),
  );
  const answers = logs.flatMap((log) => log.answers);
  expect(answers.every((answer) => answer.status === 302)).toBe(true);
  // Each connection was handed back with Connection: close, and only its last answer said so.
  for (const log of logs) {
    const closing = log.answers.filter((answer) => answer.headers.connection === 'close');
    expect(closing).toEqual([log.answers.at(-1)]);
  }
  // Every redirect the service answered counted its click, and it counted no other: the final
  // flush wrote them all, so none was taken and then cut off.
  const clicks = await eventually(
    async () => {
      const row = await suite.postgres.db
        .selectFrom('link_clicks')
        .select('click_count')
        .where('link_id', '=', link.id)
        .executeTakeFirst();
      return row?.click_count === answers.length && row.click_count;
    },
    { timeoutMs: 5_000, what: `${answers.length} clicks counted` },
  ).catch(() => -1);
  expect(clicks).toBe(answers.length);
  process.stdout.write(
    `redirect drain: ${answers.length} redirects on ${CLIENTS} keep-alive clients, exit ${exitMs} ms after SIGTERM (grace ${GRACE_MS} ms)\n`,
  );
});
