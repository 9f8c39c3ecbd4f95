import { eventually } from '@linkservice/testing';
import type { HttpRequest } from '@linkservice/testing';
import { sendApiRequest, useOwnDatabaseStack } from '../support/stack';
import type { Tenant } from '../support/tenants';
import { createTenant } from '../support/tenants';
import { WebhookReceiver } from '../support/webhook-receiver';
import { OtlpReceiver, SPAN_KIND } from '../support/otlp-receiver';

/**
 * Webhooks end to end: the compiled gateway, worker and redirect, endpoints registered through
 * the API, events produced by real changes, and local receivers that verify every delivery with
 * the `standardwebhooks` package as a customer's server would. Receivers listen on loopback,
 * which this stack allows explicitly (WEBHOOK_ALLOWED_CIDRS); the refusal of internal addresses
 * is checked on save here and on delivery in the worker's own tests.
 */
const TIMEOUT_MS = 1_500;
/** Started before the stack (beforeAll runs in order): the services export their spans to it. */
let traces: OtlpReceiver;
beforeAll(async () => {
  traces = await OtlpReceiver.start();
});
afterAll(async () => {
  await traces.close();
});
const suite = useOwnDatabaseStack(() => ({
  otlpEndpoint: traces.url,
  env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' },
  serviceEnv: {
    worker: {
      // Standard Webhooks' schedule, in tenths of seconds: the same steps, fast enough to watch.
      WEBHOOK_RETRY_SCHEDULE: '0,0.2,0.5,1,1,1,1,1',
      WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
      WEBHOOK_RELAY_INTERVAL_MS: '100',
    },
  },
}));

jest.setTimeout(60_000);

const receivers: WebhookReceiver[] = [];
async function receiver(): Promise<WebhookReceiver> {
  const started = await WebhookReceiver.start();
  receivers.push(started);
  return started;
}
afterAll(async () => {
  await Promise.all(receivers.map((r) => r.close()));
});

/** The test environment's key: its endpoints may be http (live ones must be https). */
function api(path: string, tenant: Tenant, request: Omit<HttpRequest, 'key'> = {}) {
  return sendApiRequest(`${suite.stack.apiUrl}${path}`, { key: tenant.test.secret, ...request });
}

interface Registered {
  id: string;
  secret: string;
}

async function register(
  tenant: Tenant,
  url: string,
  eventTypes: string[] = ['link.created', 'link.updated', 'link.archived'],
): Promise<Registered> {
  const res = await api('/webhooks', tenant, { method: 'POST', body: { url, eventTypes } });
  expect(res.status).toBe(201);
  const body = res.body as unknown as { webhook: { id: string }; secret: string };
  expect(body.secret).toMatch(/^whsec_/);
  return { id: body.webhook.id, secret: body.secret };
}

async function createLink(tenant: Tenant, body: Record<string, unknown> = {}) {
  const res = await api('/links', tenant, {
    method: 'POST',
    body: { webFallbackUrl: 'https://example.com', ...body },
  });
  expect(res.status).toBe(201);
  return (res.body as unknown as { link: { id: string; alias: string } }).link;
}

async function deliveriesOf(tenant: Tenant, endpoint: string) {
  const res = await api(`/webhooks/${endpoint}/deliveries?limit=100`, tenant);
  expect(res.status).toBe(200);
  return (res.body as unknown as { deliveries: Record<string, unknown>[] }).deliveries;
}

describe('webhooks, end to end', () => {
  it('delivers every change, signed, in order per link, a batch as one event per link', async () => {
    const tenant = await createTenant(suite.postgres.db);
    const hooks = await receiver();
    const endpoint = await register(tenant, hooks.url);

    const link = await createLink(tenant, { alias: 'first', title: 'One' });
    const batch = await api('/links/batch', tenant, {
      method: 'POST',
      body: {
        links: Array.from({ length: 100 }, (_, i) => ({
          webFallbackUrl: `https://e.example/${i}`,
        })),
      },
    });
    expect(batch.status).toBe(201);
    const patched = await api(`/links/${link.id}`, tenant, {
      method: 'PATCH',
      body: { title: 'Two' },
    });
    const archived = await api(`/links/${link.id}`, tenant, { method: 'DELETE' });
    expect([patched.status, archived.status]).toEqual([200, 200]);

    await eventually(() => hooks.eventIds().length >= 103, { timeoutMs: 20_000 });
    expect(hooks.eventIds()).toHaveLength(103);
    for (const delivery of hooks.received) {
      expect(WebhookReceiver.verifies(delivery, endpoint.secret)).toBe(true);
      expect(delivery.headers['content-type']).toMatch(/^application\/json/);
    }
    const ofLink = hooks.received.filter(({ event }) => event.data.id === link.id);
    expect(ofLink.map(({ event }) => event.type)).toEqual([
      'link.created',
      'link.updated',
      'link.archived',
    ]);
    expect(ofLink[1]?.event.data).toEqual((patched.body as { link: unknown }).link);
    expect(ofLink[2]?.event.data).toEqual((archived.body as { link: unknown }).link);
    const created = hooks.received.filter(({ event }) => event.type === 'link.created');
    expect(created).toHaveLength(101);
    expect(new Set(created.map(({ event }) => event.data.id)).size).toBe(101);
    // A forged or replayed-elsewhere body does not verify.
    const tampered = { ...hooks.received[0]!, body: hooks.received[0]!.body.replace('"', ' "') };
    expect(WebhookReceiver.verifies(tampered, endpoint.secret)).toBe(false);

    const listed = await eventually(async () => {
      const page = await deliveriesOf(tenant, endpoint.id);
      return page.every(({ status }) => status === 'delivered') && page;
    });
    expect(listed).toHaveLength(100);
  });

  it('retries a failing receiver with the same webhook-id until it recovers, and logs each attempt', async () => {
    const tenant = await createTenant(suite.postgres.db);
    const hooks = await receiver();
    hooks.answer = ({ sequence }) => ({ status: sequence <= 2 ? 503 : 200 });
    const endpoint = await register(tenant, hooks.url, ['link.created']);
    await createLink(tenant);

    const delivery = await eventually(
      async () => {
        const [first] = await deliveriesOf(tenant, endpoint.id);
        return first?.status === 'delivered' && first;
      },
      { timeoutMs: 15_000 },
    );
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 3 });
    expect(hooks.received).toHaveLength(3);
    expect(new Set(hooks.received.map(({ id }) => id)).size).toBe(1);
    const log = delivery.attemptLog as { responseStatus: number | null; outcome: string }[];
    expect(log.map(({ responseStatus }) => responseStatus)).toEqual([200, 503, 503]);
    const got = await api(`/webhooks/${endpoint.id}`, tenant);
    expect((got.body as { webhook?: unknown } | undefined)?.webhook).toMatchObject({
      status: 'enabled',
      failingSince: null,
    });
  });

  it('times a slow receiver out and sends the event again with the same id', async () => {
    const tenant = await createTenant(suite.postgres.db);
    const hooks = await receiver();
    hooks.answer = ({ sequence }) =>
      sequence === 1 ? { status: 200, delayMs: TIMEOUT_MS + 1_000 } : { status: 200 };
    const endpoint = await register(tenant, hooks.url, ['link.created']);
    await createLink(tenant);
    const delivery = await eventually(
      async () => {
        const [first] = await deliveriesOf(tenant, endpoint.id);
        return first?.status === 'delivered' && first;
      },
      { timeoutMs: 15_000 },
    );
    expect(delivery).toMatchObject({ status: 'delivered', attempts: 2 });
    expect(hooks.received).toHaveLength(2);
    expect(hooks.received[0]?.id).toBe(hooks.received[1]?.id);
    const log = delivery.attemptLog as { outcome: string; durationMs: number }[];
    expect(log[1]).toMatchObject({ outcome: 'timeout' });
    expect(log[1]?.durationMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    expect(log[1]?.durationMs).toBeLessThan(TIMEOUT_MS + 1_000);
  });

  it('disables an endpoint that answers 410, and says so', async () => {
    const tenant = await createTenant(suite.postgres.db);
    const hooks = await receiver();
    hooks.answer = () => ({ status: 410 });
    const endpoint = await register(tenant, hooks.url, ['link.created']);
    await createLink(tenant);
    const disabled = await eventually(async () => {
      const got = await api(`/webhooks/${endpoint.id}`, tenant);
      const webhook = (got.body as { webhook?: { status: string } } | undefined)?.webhook;
      return webhook?.status === 'disabled' && webhook;
    });
    expect(disabled).toMatchObject({ status: 'disabled', disabledReason: 'gone' });
    // Disabled: the next change writes no event (nothing subscribes any more), so nothing goes.
    const later = await createLink(tenant);
    const events = await suite.postgres.db
      .selectFrom('webhook_events')
      .select('subject')
      .where('app_id', '=', tenant.appId)
      .execute();
    expect(events.map(({ subject }) => subject)).not.toContain(later.id);
    expect(hooks.received).toHaveLength(1);
  });

  it('does not follow a redirect', async () => {
    const tenant = await createTenant(suite.postgres.db);
    const target = await receiver();
    const hooks = await receiver();
    hooks.answer = () => ({ status: 302, headers: { location: target.url } });
    const endpoint = await register(tenant, hooks.url, ['link.created']);
    await createLink(tenant);
    const delivery = await eventually(async () => {
      const [first] = await deliveriesOf(tenant, endpoint.id);
      return (first?.attempts as number) >= 2 && first;
    });
    expect(target.received).toHaveLength(0);
    const log = delivery.attemptLog as { responseStatus: number | null }[];
    expect(log.every(({ responseStatus }) => responseStatus === 302)).toBe(true);
  });

  it('signs with the old and the new secret for a day after a rotation', async () => {
    const tenant = await createTenant(suite.postgres.db);
    const hooks = await receiver();
    const endpoint = await register(tenant, hooks.url, ['link.created']);
    const rotated = await api(`/webhooks/${endpoint.id}/rotate-secret`, tenant, { method: 'POST' });
    expect(rotated.status).toBe(200);
    const fresh = (rotated.body as unknown as Registered).secret;
    expect(fresh).not.toBe(endpoint.secret);
    await createLink(tenant);
    await eventually(() => hooks.received.length > 0);
    const [delivery] = hooks.received;
    expect(delivery!.signature.split(' ')).toHaveLength(2);
    expect(WebhookReceiver.verifies(delivery!, fresh)).toBe(true);
    expect(WebhookReceiver.verifies(delivery!, endpoint.secret)).toBe(true);
  });

  it('refuses to save a URL that reaches an internal address, naming the class', async () => {
    const tenant = await createTenant(suite.postgres.db);
    for (const url of [
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest',
      'http://[fe80::1]/',
    ]) {
      const res = await api('/webhooks', tenant, {
        method: 'POST',
        body: { url: url.replace('http:', 'https:'), eventTypes: ['link.created'] },
      });
      expect(res.status).toBe(422);
      expect(JSON.stringify(res.body)).toContain('url');
    }
  });

  it('delivers install.matched and install.erased in order, without the install secret', async () => {
    const tenant = await createTenant(suite.postgres.db);
    const hooks = await receiver();
    await register(tenant, hooks.url, ['install.matched', 'install.erased']);
    const link = await createLink(tenant, { alias: 'opened', deepLinkData: { screen: 'x' } });
    const linkUrl = `https://${tenant.subdomainKey}-test.${suite.stack.linkDomain}/${link.alias}`;
    const reported = await sendApiRequest(`${suite.stack.apiUrl}/sdk/installs`, {
      key: tenant.publishable.test.secret,
      method: 'POST',
      body: { platform: 'android', openedUrl: linkUrl },
    });
    expect(reported.status).toBe(201);
    const install = (reported.body as unknown as { install: { id: string; secret: string } })
      .install;
    const erased = await sendApiRequest(`${suite.stack.apiUrl}/sdk/installs/${install.id}`, {
      key: tenant.publishable.test.secret,
      method: 'DELETE',
      headers: { 'x-install-secret': install.secret },
    });
    expect(erased.status).toBe(200);
    await eventually(() => hooks.received.length >= 2);
    expect(hooks.received.map(({ event }) => event.type)).toEqual([
      'install.matched',
      'install.erased',
    ]);
    expect(hooks.received[0]?.event.data).toMatchObject({
      install: { id: install.id, platform: 'android' },
      match: { type: 'deterministic', method: 'opened_url' },
      link: { id: link.id, url: linkUrl },
    });
    expect(hooks.received.map(({ body }) => body).join('')).not.toContain(install.secret);
  });

  it('continues the trace of the change to every attempt to deliver it, without the secret', async () => {
    const tenant = await createTenant(suite.postgres.db);
    const hooks = await receiver();
    hooks.answer = ({ sequence }) => ({ status: sequence === 1 ? 500 : 204 });
    const endpoint = await register(tenant, `${hooks.url}?token=receiver-query-marker`, [
      'link.updated',
    ]);
    const link = await createLink(tenant);
    const requestId = `req-webhook-${Date.now()}`;
    const patched = await api(`/links/${link.id}`, tenant, {
      method: 'PATCH',
      body: { title: 'traced' },
      headers: { 'x-request-id': requestId },
    });
    expect(patched.status).toBe(200);
    await eventually(() => hooks.received.length >= 2);

    const attempts = await eventually(
      () => {
        const server = traces.spans.find(
          (span) =>
            span.kind === SPAN_KIND.server &&
            span.attributes['linkservice.request_id'] === requestId,
        );
        if (!server) return false;
        const found = traces
          .trace(server.traceId)
          .filter((span) => span.resource['service.name'] === 'linkservice-worker')
          .filter((span) => span.attributes['linkservice.webhook.event_type'] === 'link.updated');
        return found.length >= 2 && found;
      },
      { timeoutMs: 15_000, intervalMs: 100, what: 'both attempts in the PATCH trace' },
    );
    expect(attempts.map((span) => span.attributes['linkservice.webhook.attempt']).sort()).toEqual([
      1, 2,
    ]);
    const exported = traces.rawBodies.join('\n');
    expect(exported).not.toContain(endpoint.secret.slice('whsec_'.length));
    expect(exported).not.toContain('receiver-query-marker');
  });
});
