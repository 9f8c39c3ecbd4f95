import type { Environment } from '@linkservice/db';
import { newId } from '@linkservice/db';
import type { Tenant } from '@linkservice/testing';
import { linkOf } from '@linkservice/testing';
import type { WebhookEventType } from '@linkservice/webhooks';
import { eventPayload, generateSigningSecret, secretBoxOf } from '@linkservice/webhooks';
import { useCreationStack } from '../creation/creation.testing';

/**
 * The outbox's producers: every change an event reports writes it in its own statement, only
 * for apps with a subscribed, enabled endpoint, and what a delivery renders is what the API
 * shows. Endpoints are inserted here directly; the delivery itself has tests of its own.
 */
const DOMAIN = 'go.example.test';
const kit = useCreationStack({ env: { LINK_DOMAIN: DOMAIN } });

interface StoredEvent {
  id: string;
  type: WebhookEventType;
  environment: Environment;
  subject: string;
  snapshot: Record<string, unknown>;
  traceparent: string | null;
  occurred_at: Date;
  deliveries: number;
}

async function subscribe(
  tenant: Tenant,
  eventTypes: readonly WebhookEventType[],
  {
    environment = 'live',
    disabled = false,
  }: { environment?: Environment; disabled?: boolean } = {},
): Promise<string> {
  const id = newId('whk');
  await kit.db
    .insertInto('webhook_endpoints')
    .values({
      id,
      app_id: tenant.appId,
      environment,
      // Nothing listens there: these tests read the outbox, not what reaches a receiver.
      url: 'https://receiver.invalid/hook',
      event_types: [...eventTypes],
      secret: secretBoxOf(kit.stack.gateway.deps.config).seal(generateSigningSecret()),
      disabled_at: disabled ? new Date() : null,
      disabled_reason: disabled ? 'requested' : null,
    })
    .execute();
  return id;
}

async function eventsOf(tenant: Tenant): Promise<StoredEvent[]> {
  return kit.db
    .selectFrom('webhook_events')
    .select(['id', 'type', 'environment', 'subject', 'snapshot', 'traceparent', 'occurred_at'])
    .select((eb) =>
      eb
        .selectFrom('webhook_deliveries')
        .select(eb.fn.countAll<number>().as('n'))
        .whereRef('webhook_deliveries.event_id', '=', 'webhook_events.id')
        .as('deliveries'),
    )
    .where('app_id', '=', tenant.appId)
    .orderBy('seq')
    .execute() as Promise<StoredEvent[]>;
}

/** The data member of the body a delivery of `event` sends. */
function dataOf(event: StoredEvent, tenant: Tenant): unknown {
  const body = eventPayload(
    {
      id: event.id,
      type: event.type,
      environment: event.environment,
      occurredAt: event.occurred_at,
      snapshot: event.snapshot,
      subdomainKey: tenant.subdomainKey,
    },
    DOMAIN,
  );
  return (JSON.parse(body) as { data: unknown }).data;
}

const api = (path: string, key: string, method = 'GET', body?: unknown) =>
  kit.stack.gateway.api(path, { key, method, ...(body === undefined ? {} : { body }) });

describe('link events in the outbox', () => {
  it('writes nothing for an app without endpoints', async () => {
    const tenant = await kit.newTenant();
    const link = linkOf(
      await kit.create(tenant.live.secret, { webFallbackUrl: 'https://a.example' }),
    );
    await api(`/api/v1/links/${link.id}`, tenant.live.secret, 'PATCH', { title: 'T' });
    await api(`/api/v1/links/${link.id}`, tenant.live.secret, 'DELETE');
    expect(await eventsOf(tenant)).toEqual([]);
  });

  it('records created, updated and archived, each rendering what the API showed at that moment', async () => {
    const tenant = await kit.newTenant();
    const endpoint = await subscribe(tenant, ['link.created', 'link.updated', 'link.archived']);
    const created = linkOf(
      await kit.create(tenant.live.secret, {
        alias: 'evt-1',
        webFallbackUrl: 'https://a.example',
        deepLinkData: { screen: 'promo', n: [1, 'two', null] },
        tags: ['x'],
        expiresAt: '2099-01-01T00:00:00Z',
      }),
    );
    const patched = await api(`/api/v1/links/${created.id}`, tenant.live.secret, 'PATCH', {
      title: 'Changed',
    });
    expect(patched.status).toBe(200);
    // The same values again change nothing: no event.
    await api(`/api/v1/links/${created.id}`, tenant.live.secret, 'PATCH', { title: 'Changed' });
    const archived = await api(`/api/v1/links/${created.id}`, tenant.live.secret, 'DELETE');
    expect(archived.status).toBe(200);

    const events = await eventsOf(tenant);
    expect(events.map(({ type, subject, deliveries }) => [type, subject, deliveries])).toEqual([
      ['link.created', created.id, 1],
      ['link.updated', created.id, 1],
      ['link.archived', created.id, 1],
    ]);
    expect(dataOf(events[0], tenant)).toEqual(created);
    expect(dataOf(events[1], tenant)).toEqual(patched.body?.link);
    expect(dataOf(events[2], tenant)).toEqual(archived.body?.link);
    expect(new Set(events.map(({ id }) => id)).size).toBe(3);
    for (const { id } of events) expect(id).toMatch(/^evt_[0-9a-f]{32}$/);
    // (Their status is the delivery's business: another file's worker on this database may
    // already have tried them.)
    const deliveries = await kit.db
      .selectFrom('webhook_deliveries')
      .select('endpoint_id')
      .where(
        'event_id',
        'in',
        events.map(({ id }) => id),
      )
      .execute();
    expect(deliveries).toEqual(events.map(() => ({ endpoint_id: endpoint })));
  });

  it('writes one event per link of a batch, with one delivery per subscribed endpoint', async () => {
    const tenant = await kit.newTenant();
    await subscribe(tenant, ['link.created']);
    await subscribe(tenant, ['link.created', 'link.archived']);
    await subscribe(tenant, ['link.archived']);
    const res = await kit.createBatch(
      tenant.live.secret,
      Array.from({ length: 100 }, (_, i) => ({ webFallbackUrl: `https://a.example/${i}` })),
    );
    expect(res.status).toBe(201);
    const links = (res.body?.results as { link: { id: string } }[]).map(({ link }) => link.id);
    const events = await eventsOf(tenant);
    expect(events).toHaveLength(100);
    expect(events.map(({ subject }) => subject).sort()).toEqual([...links].sort());
    expect(
      events.every(({ type, deliveries }) => type === 'link.created' && deliveries === 2),
    ).toBe(true);
  });

  it('writes nothing for an unsubscribed type, a disabled endpoint, or the other environment', async () => {
    const tenant = await kit.newTenant();
    await subscribe(tenant, ['link.archived']);
    await subscribe(tenant, ['link.created'], { disabled: true });
    await subscribe(tenant, ['link.created'], { environment: 'test' });
    const link = linkOf(
      await kit.create(tenant.live.secret, { webFallbackUrl: 'https://a.example' }),
    );
    expect(await eventsOf(tenant)).toEqual([]);

    const other = await kit.newTenant();
    await subscribe(other, ['link.created']);
    await api(`/api/v1/links/${link.id}`, tenant.live.secret, 'DELETE');
    expect((await eventsOf(tenant)).map(({ type }) => type)).toEqual(['link.archived']);
    expect(await eventsOf(other)).toEqual([]);
  });

  it('writes no event when the change itself is refused', async () => {
    const tenant = await kit.newTenant();
    await subscribe(tenant, ['link.created', 'link.updated', 'link.archived']);
    const first = await kit.create(tenant.live.secret, {
      alias: 'taken',
      webFallbackUrl: 'https://a.example',
    });
    expect(first.status).toBe(201);
    const duplicate = await kit.create(tenant.live.secret, {
      alias: 'taken',
      webFallbackUrl: 'https://b.example',
    });
    expect(duplicate.status).toBe(422);
    const id = linkOf(first).id;
    expect((await api(`/api/v1/links/${id}`, tenant.live.secret, 'DELETE')).status).toBe(200);
    // Archived links cannot be edited or archived again: no change, no event.
    await api(`/api/v1/links/${id}`, tenant.live.secret, 'PATCH', { title: 'late' });
    await api(`/api/v1/links/${id}`, tenant.live.secret, 'DELETE');
    expect((await eventsOf(tenant)).map(({ type }) => type)).toEqual([
      'link.created',
      'link.archived',
    ]);
  });
});

describe('install events in the outbox', () => {
  const report = (tenant: Tenant, body: unknown) =>
    kit.stack.gateway.api('/api/v1/sdk/installs', {
      key: tenant.publishable.live.secret,
      body,
    });

  it('records a match and an erasure in the shapes the API answered, never the install secret', async () => {
    const tenant = await kit.newTenant();
    await subscribe(tenant, ['install.matched', 'install.erased']);
    const link = linkOf(
      await kit.create(tenant.live.secret, {
        alias: 'app-open',
        webFallbackUrl: 'https://a.example',
        deepLinkData: { screen: 'welcome' },
      }),
    );
    const reported = await report(tenant, { platform: 'ios', openedUrl: link.url });
    expect(reported.status).toBe(201);
    const answer = reported.body as {
      install: { id: string; secret: string };
      match: unknown;
      link: unknown;
      deepLinkData: unknown;
    };
    // No match, no event.
    expect((await report(tenant, { platform: 'android' })).status).toBe(201);

    const erased = await kit.stack.gateway.api(`/api/v1/sdk/installs/${answer.install.id}`, {
      method: 'DELETE',
      key: tenant.publishable.live.secret,
      headers: { 'x-install-secret': answer.install.secret },
    });
    expect(erased.status).toBe(200);

    const events = await eventsOf(tenant);
    expect(events.map(({ type, subject }) => [type, subject])).toEqual([
      ['install.matched', answer.install.id],
      ['install.erased', answer.install.id],
    ]);
    expect(dataOf(events[0], tenant)).toEqual({
      install: { id: answer.install.id, platform: 'ios' },
      match: answer.match,
      link: answer.link,
      deepLinkData: answer.deepLinkData,
    });
    expect(dataOf(events[1], tenant)).toEqual({
      ...(erased.body as { erased: object }).erased,
      environment: 'live',
    });
    expect(JSON.stringify(events)).not.toContain(answer.install.secret);
  });
});
