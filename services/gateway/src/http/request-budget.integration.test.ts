import { request } from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { insertLink } from '@linkservice/testing';
import type { GatewayWithTenants } from '../testing/gateway-harness';
import { startGatewayWithTenants } from '../testing/gateway-harness';

/** A budget far shorter than the pause in the upload below. */
const BUDGET_MS = 300;

/** PATCHes with the body sent in two parts `pauseMs` apart: a slow client's upload. */
function slowPatch(
  baseUrl: string,
  path: string,
  secret: string,
  body: unknown,
  pauseMs: number,
): Promise<{ status: number; body: unknown }> {
  const text = JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}${path}`, {
      method: 'PATCH',
      headers: {
        authorization: `Bearer ${secret}`,
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      },
    });
    req.on('error', reject);
    req.on('response', (res) => {
      let received = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (received += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: JSON.parse(received) as unknown });
      });
    });
    req.write(text.slice(0, 5));
    void delay(pauseMs).then(() => req.end(text.slice(5)));
  });
}

describe('the request budget', () => {
  let started: GatewayWithTenants;

  beforeAll(async () => {
    started = await startGatewayWithTenants({ env: { API_REQUEST_BUDGET_MS: String(BUDGET_MS) } });
  });
  afterAll(() => started.gateway.stop());

  it('starts again once the body has arrived: a slow upload is not charged to Postgres', async () => {
    const { gateway, alpha } = started;
    const link = await insertLink(gateway.deps.db, { appId: alpha.appId, environment: 'live' });
    const answer = await slowPatch(
      gateway.baseUrl,
      `/api/v1/links/${link.id}`,
      alpha.live.secret,
      { title: 'uploaded slowly' },
      BUDGET_MS * 3,
    );
    expect(answer).toEqual({
      status: 200,
      body: { link: expect.objectContaining({ id: link.id, title: 'uploaded slowly' }) },
    });
  });
});
