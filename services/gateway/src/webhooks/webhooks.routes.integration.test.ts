import { sql } from 'kysely';
import type { Environment } from '@linkservice/db';
import type { ApiResponse, Tenant } from '@linkservice/testing';
import { createTenant, ownDatabase } from '@linkservice/testing';
import { secretBoxOf, WEBHOOK_EVENT_TYPES } from '@linkservice/webhooks';
import { loadConfig } from '../config';
import type { TestGateway } from '../testing';
import { startGatewayWithTenants } from '../testing';
import type { Webhook } from './webhooks.service';

/** A public unicast address given as an IP literal: nothing to resolve. */
const PUBLIC_URL = 'https://93.184.215.14/hooks';
const NOT_FOUND = { error: 'not_found', message: 'No such webhook.' };
const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

let gateway: TestGateway;
let alpha: Tenant;
let beta: Tenant;
let database: Awaited<ReturnType<typeof ownDatabase>>;

// A database of this file's own: every worker's relay acts on the due deliveries of its whole
// database, and spawned test stacks run on the run's.
beforeAll(async () => {
  database = await ownDatabase(1);
  ({ gateway, alpha, beta } = await startGatewayWithTenants({
    env: { DATABASE_URL: database.url },
  }));
});
afterAll(async () => {
  await gateway.stop();
  await database.drop();
});

type Key = string;
const keyOf = (tenant: Tenant, environment: Environment = 'live'): Key =>
  tenant[environment].secret;

interface WebhookAnswer {
  webhook: Webhook;
  secret?: string;
}

function answerOf(res: ApiResponse): WebhookAnswer {
  const body = res.body as unknown as WebhookAnswer | undefined;
  if (!body?.webhook) throw new Error(`no webhook in the answer: ${res.status} ${res.text}`);
  return body;
}

function create(body: unknown, key: Key = keyOf(alpha)) {
  return gateway.api('/api/v1/webhooks', { key, method: 'POST', body });
}

async function created(body: object = {}, key: Key = keyOf(alpha)): Promise<WebhookAnswer> {
  const res = await create({ url: PUBLIC_URL, eventTypes: ['link.created'], ...body }, key);
  expect(res.status).toBe(201);
  return answerOf(res);
}

function get(id: string, key: Key = keyOf(alpha)) {
  return gateway.api(`/api/v1/webhooks/${id}`, { key });
}

function patch(id: string, body: unknown, key: Key = keyOf(alpha)) {
  return gateway.api(`/api/v1/webhooks/${id}`, { key, method: 'PATCH', body });
}

function remove(id: string, key: Key = keyOf(alpha)) {
  return gateway.api(`/api/v1/webhooks/${id}`, { key, method: 'DELETE' });
}

function rotate(id: string, key: Key = keyOf(alpha), body?: unknown) {
  return gateway.api(`/api/v1/webhooks/${id}/rotate-secret`, { key, method: 'POST', body });
}

function endpointRow(id: string) {
  return gateway.deps.db
    .selectFrom('webhook_endpoints')
    .selectAll()
    .where('id', '=', id)
    .executeTakeFirstOrThrow();
}

/** The database clock, so timing checks do not depend on this process' clock. */
async function dbNow(): Promise<Date> {
  const { rows } = await sql<{ now: Date }>`SELECT now() AS now`.execute(gateway.deps.db);
  return rows[0].now;
}

describe('POST /webhooks and reading back', () => {
  it('creates an enabled endpoint, shows its secret once, and GET, list, PATCH, DELETE round-trip', async () => {
    const res = await create({
      url: PUBLIC_URL,
      // Listed in the document's order whatever order they are sent in.
      eventTypes: ['link.updated', 'link.created'],
      description: 'Order sync',
    });
    expect(res.status).toBe(201);
    const { webhook, secret } = answerOf(res);
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(webhook).toEqual({
      id: expect.stringMatching(/^whk_/),
      url: PUBLIC_URL,
      description: 'Order sync',
      eventTypes: ['link.created', 'link.updated'],
      environment: 'live',
      status: 'enabled',
      disabledReason: null,
      disabledAt: null,
      failingSince: null,
      previousSecretExpiresAt: null,
      createdAt: expect.stringMatching(ISO_MS),
      updatedAt: webhook.createdAt,
    });

    const read = await get(webhook.id);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({ webhook });
    expect(read.text).not.toContain('whsec_');

    const list = await gateway.api('/api/v1/webhooks', { key: keyOf(alpha) });
    expect(list.status).toBe(200);
    expect((list.body as unknown as { webhooks: Webhook[] }).webhooks).toContainEqual(webhook);
    expect(list.text).not.toContain('whsec_');

    const changed = await patch(webhook.id, {
      url: 'https://93.184.215.14/other',
      description: null,
      eventTypes: WEBHOOK_EVENT_TYPES,
    });
    expect(changed.status).toBe(200);
    expect(changed.text).not.toContain('whsec_');
    expect(answerOf(changed).webhook).toMatchObject({
      url: 'https://93.184.215.14/other',
      description: null,
      eventTypes: [...WEBHOOK_EVENT_TYPES],
    });
    expect((await get(webhook.id)).body).toEqual(changed.body);

    const deleted = await remove(webhook.id);
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe('');
    expect((await get(webhook.id)).body).toEqual(NOT_FOUND);
    expect((await remove(webhook.id)).status).toBe(404);
  });

  it('stores the secret sealed, opening to the secret shown', async () => {
    const { webhook, secret } = await created();
    const row = await endpointRow(webhook.id);
    expect(row.secret).not.toContain(secret!);
    expect(row.secret).toMatch(/^v1\./);
    expect(secretBoxOf(loadConfig(process.env)).open(row.secret)).toBe(secret);
    expect(row.previous_secret).toBeNull();
  });

  it('lists every endpoint of the app and environment, oldest first, and only those', async () => {
    const tenant = await createTenant(gateway.deps.db);
    const first = await created({ description: 'first' }, keyOf(tenant));
    const second = await created({ description: 'second' }, keyOf(tenant));
    await created({ description: 'test env' }, keyOf(tenant, 'test'));
    const list = await gateway.api('/api/v1/webhooks', { key: keyOf(tenant) });
    expect(list.body).toEqual({ webhooks: [first.webhook, second.webhook] });
    const empty = await gateway.api('/api/v1/webhooks', {
      key: keyOf(await createTenant(gateway.deps.db)),
    });
    expect(empty.body).toEqual({ webhooks: [] });
  });

  it('allows http in test, not in live', async () => {
    const url = 'http://93.184.215.14/hooks';
    const test = await create({ url, eventTypes: ['link.created'] }, keyOf(alpha, 'test'));
    expect(test.status).toBe(201);
    expect(answerOf(test).webhook).toMatchObject({ url, environment: 'test' });
    const live = await create({ url, eventTypes: ['link.created'] });
    expect({ status: live.status, fields: live.body?.fields }).toEqual({
      status: 422,
      fields: { url: 'must use https in live' },
    });
  });
});

describe('422 for each bad field', () => {
  const good = { url: PUBLIC_URL, eventTypes: ['link.created'] };

  it.each<[string, object, Record<string, string | RegExp>]>([
    ['no fields', {}, { url: 'is required', eventTypes: 'is required' }],
    ['a URL that is not one', { ...good, url: 'not-a-url' }, { url: 'must be an absolute URL' }],
    ['a URL that is not a string', { ...good, url: 5 }, { url: /absolute http\(s\) URL/ }],
    [
      'another scheme',
      { ...good, url: 'ftp://93.184.215.14/x' },
      { url: 'must be an http(s) URL' },
    ],
    [
      'credentials in the URL',
      { ...good, url: 'https://user:pass@93.184.215.14/x' },
      { url: 'must not carry credentials' },
    ],
    ['a fragment', { ...good, url: `${PUBLIC_URL}#part` }, { url: 'must not have a fragment' }],
    ['a URL with a space', { ...good, url: 'https://93.184.215.14/a b' }, { url: /spaces/ }],
    ['a URL with NUL', { ...good, url: 'https://93.184.215.14/a\u0000' }, { url: /control/ }],
    [
      'a URL too long',
      { ...good, url: `${PUBLIC_URL}/${'a'.repeat(2048)}` },
      { url: /2048 characters/ },
    ],
    [
      'an unknown event type',
      { ...good, eventTypes: ['link.deleted'] },
      { eventTypes: /"link.deleted"/ },
    ],
    [
      'no event types',
      { ...good, eventTypes: [] },
      { eventTypes: 'must name at least one event type' },
    ],
    [
      'a repeated event type',
      { ...good, eventTypes: ['link.created', 'link.created'] },
      { eventTypes: 'must not name an event type twice' },
    ],
    ['event types not an array', { ...good, eventTypes: 'link.created' }, { eventTypes: /array/ }],
    ['a description too long', { ...good, description: 'x'.repeat(501) }, { description: /500/ }],
    ['a description not a string', { ...good, description: 5 }, { description: /500/ }],
    ['a description with NUL', { ...good, description: 'a\u0000b' }, { description: /NUL/ }],
    ['an unknown field', { ...good, colour: 'red' }, { colour: 'is not a field of a webhook' }],
    ['a server-set field', { ...good, secret: 'whsec_x' }, { secret: /set by the server/ }],
    ['enabled on create', { ...good, enabled: false }, { enabled: /cannot be sent on create/ }],
    [
      'several at once, a refused address among them',
      { url: 'https://127.0.0.1/x', eventTypes: [], nope: 1 },
      { url: /loopback/, eventTypes: /at least one/, nope: /not a field/ },
    ],
  ])('%s', async (_case, body, fields) => {
    const res = await create(body);
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: 'invalid_request',
      message: 'Some fields are invalid.',
      fields: Object.fromEntries(
        Object.entries(fields).map(([name, message]) => [
          name,
          typeof message === 'string' ? message : expect.stringMatching(message),
        ]),
      ),
    });
  });

  it('keeps 500 characters of description, counted as characters', async () => {
    const description = '✓'.repeat(499) + '😀';
    const { webhook } = await created({ description });
    expect(webhook.description).toBe(description);
  });

  it('saves nothing when it refuses', async () => {
    const tenant = await createTenant(gateway.deps.db);
    await create({ url: 'https://127.0.0.1/x', eventTypes: ['link.created'] }, keyOf(tenant));
    await create({ url: PUBLIC_URL, eventTypes: ['nope'] }, keyOf(tenant));
    const list = await gateway.api('/api/v1/webhooks', { key: keyOf(tenant) });
    expect(list.body).toEqual({ webhooks: [] });
  });
});

describe('refused destinations', () => {
  it.each([
    ['https://127.0.0.1/x', 'a loopback address (127.0.0.1)'],
    ['https://[::1]/x', 'a loopback address (::1)'],
    ['https://localhost/x', /^a loopback address \((127\.0\.0\.1|::1)\)$/],
    ['https://10.0.0.1/x', 'a private address (10.0.0.1)'],
    ['https://172.16.0.1/x', 'a private address (172.16.0.1)'],
    ['https://192.168.1.1/x', 'a private address (192.168.1.1)'],
    ['https://169.254.169.254/latest/meta-data', 'a cloud metadata address (169.254.169.254)'],
    ['https://[fe80::1]/x', 'a link-local address (fe80::1)'],
    ['https://[fc00::1]/x', 'a private address (fc00::1)'],
    ['https://224.0.0.1/x', 'a multicast address (224.0.0.1)'],
    ['https://0.0.0.0/x', 'an unspecified address (0.0.0.0)'],
    ['https://100.64.0.1/x', 'a private address (100.64.0.1)'],
    ['https://[::ffff:127.0.0.1]/x', /^a loopback address \(::ffff:/],
    // The URL parser reads these as 127.0.0.1 too.
    ['https://2130706433/x', 'a loopback address (127.0.0.1)'],
    ['https://0x7f.1/x', 'a loopback address (127.0.0.1)'],
  ])('refuses %s: 422 naming url and the class', async (url, reason) => {
    for (const environment of ['live', 'test'] as const) {
      const res = await create({ url, eventTypes: ['link.created'] }, keyOf(alpha, environment));
      expect({ url, status: res.status, fields: res.body?.fields }).toEqual({
        url,
        status: 422,
        fields: {
          url:
            typeof reason === 'string'
              ? `resolves to ${reason}`
              : expect.stringMatching(new RegExp(`^resolves to ${reason.source.slice(1)}`)),
        },
      });
    }
  });

  it('refuses a host that does not resolve', async () => {
    const res = await create({ url: 'https://nowhere.invalid/x', eventTypes: ['link.created'] });
    expect(res.status).toBe(422);
    expect(res.body?.fields).toEqual({ url: 'has a host that does not resolve' });
  });

  it('refuses the same on PATCH, and leaves the endpoint as it was', async () => {
    const { webhook } = await created();
    for (const url of ['https://127.0.0.1/x', 'https://[fe80::1]/x', 'https://localhost/x']) {
      const res = await patch(webhook.id, { url, description: 'changed' });
      expect({ url, status: res.status, fields: Object.keys(res.body?.fields ?? {}) }).toEqual({
        url,
        status: 422,
        fields: ['url'],
      });
    }
    expect((await get(webhook.id)).body).toEqual({ webhook });
  });

  describe('with WEBHOOK_ALLOWED_CIDRS', () => {
    let allowing: TestGateway;
    beforeAll(async () => {
      allowing = await startGatewayWithTenants({
        env: { WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8, 10.1.0.0/16' },
      }).then((started) => started.gateway);
    });
    afterAll(async () => {
      await allowing.stop();
    });

    it('saves an endpoint inside an allowed range, and still refuses the rest', async () => {
      const key = keyOf(await createTenant(allowing.deps.db));
      const send = (url: string) =>
        allowing.api('/api/v1/webhooks', {
          key,
          method: 'POST',
          body: { url, eventTypes: ['link.created'] },
        });
      for (const url of [
        'https://127.0.0.1:8443/hooks',
        'https://127.1.2.3/hooks',
        'https://10.1.200.1/hooks',
        'https://[::ffff:127.0.0.1]/hooks',
      ]) {
        expect({ url, status: (await send(url)).status }).toEqual({ url, status: 201 });
      }
      for (const [url, reason] of [
        ['https://10.2.0.1/x', 'resolves to a private address (10.2.0.1)'],
        ['https://[::1]/x', 'resolves to a loopback address (::1)'],
        ['https://169.254.169.254/x', 'resolves to a cloud metadata address (169.254.169.254)'],
      ]) {
        const res = await send(url);
        expect({ url, status: res.status, fields: res.body?.fields }).toEqual({
          url,
          status: 422,
          fields: { url: reason },
        });
      }
    });
  });
});

describe('404 for another app or environment', () => {
  it('answers one identical 404 on every route and changes nothing', async () => {
    const { webhook: betaHook } = await created({ description: 'beta' }, keyOf(beta));
    const { webhook: testHook } = await created(
      { description: 'alpha test' },
      keyOf(alpha, 'test'),
    );
    const cases: [string, Key][] = [
      [betaHook.id, keyOf(alpha)],
      [testHook.id, keyOf(alpha)],
      [testHook.id, keyOf(beta, 'test')],
      ['whk_01JD0000000000000000000000', keyOf(alpha)],
      ['not an id', keyOf(alpha)],
      ['x'.repeat(200), keyOf(alpha)],
    ];
    for (const [id, key] of cases) {
      const path = encodeURIComponent(id);
      const answers = [
        await get(path, key),
        await patch(path, { description: 'hijacked' }, key),
        await patch(path, { description: 5 }, key),
        await patch(path, {}, key),
        await patch(path, { enabled: false }, key),
        await rotate(path, key),
        await gateway.api(`/api/v1/webhooks/${path}/deliveries`, { key }),
        await gateway.api(`/api/v1/webhooks/${path}/deliveries/dlv_${'0'.repeat(32)}/retry`, {
          key,
          method: 'POST',
        }),
        await remove(path, key),
      ];
      for (const res of answers) {
        expect({ id, status: res.status, text: res.text }).toEqual({
          id,
          status: 404,
          text: JSON.stringify(NOT_FOUND),
        });
      }
    }
    const betaRow = await endpointRow(betaHook.id);
    expect(betaRow).toMatchObject({
      description: 'beta',
      disabled_at: null,
      previous_secret: null,
    });
    expect((await endpointRow(testHook.id)).description).toBe('alpha test');
  });
});

describe('the limit of 20 per app and environment', () => {
  it('answers 409 for the 21st, per environment', async () => {
    const tenant = await createTenant(gateway.deps.db);
    for (let i = 0; i < 20; i++) await created({ description: `#${i}` }, keyOf(tenant));
    const over = await create({ url: PUBLIC_URL, eventTypes: ['link.created'] }, keyOf(tenant));
    expect(over.status).toBe(409);
    expect(over.body).toEqual({
      error: 'conflict',
      message: 'An app can have at most 20 webhooks per environment; delete one first.',
    });
    // The other environment has its own 20; a deletion makes room again.
    await created({}, keyOf(tenant, 'test'));
    const list = await gateway.api('/api/v1/webhooks', { key: keyOf(tenant) });
    const [first] = (list.body as unknown as { webhooks: Webhook[] }).webhooks;
    expect((await remove(first.id, keyOf(tenant))).status).toBe(204);
    await created({}, keyOf(tenant));
  });

  it('holds under concurrent creations', async () => {
    const tenant = await createTenant(gateway.deps.db);
    for (let i = 0; i < 15; i++) await created({}, keyOf(tenant));
    const answers = await Promise.all(
      Array.from({ length: 12 }, () =>
        create({ url: PUBLIC_URL, eventTypes: ['link.created'] }, keyOf(tenant)),
      ),
    );
    const statuses = answers.map((res) => res.status).sort();
    expect(statuses).toEqual([...Array<number>(5).fill(201), ...Array<number>(7).fill(409)]);
    const count = await gateway.deps.db
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<string>().as('count'))
      .where('app_id', '=', tenant.appId)
      .where('environment', '=', 'live')
      .executeTakeFirstOrThrow();
    expect(Number(count.count)).toBe(20);
  });
});

describe('PATCH /webhooks/{id}', () => {
  it('moves updatedAt only when something changed', async () => {
    const { webhook } = await created({ eventTypes: ['link.updated', 'link.created'] });
    await gateway.deps.db
      .updateTable('webhook_endpoints')
      .set({ updated_at: '2030-01-01T10:00:00.123Z' })
      .where('id', '=', webhook.id)
      .execute();
    const unchanged: object[] = [
      {},
      { url: webhook.url },
      { eventTypes: ['link.created', 'link.updated'] },
      { eventTypes: ['link.updated', 'link.created'] },
      { description: null },
      { enabled: true },
    ];
    for (const body of unchanged) {
      const res = await patch(webhook.id, body);
      expect({ body, status: res.status, updatedAt: answerOf(res).webhook.updatedAt }).toEqual({
        body,
        status: 200,
        updatedAt: '2030-01-01T10:00:00.123Z',
      });
    }
    const changed = await patch(webhook.id, { description: 'now' });
    expect(answerOf(changed).webhook.updatedAt).not.toBe('2030-01-01T10:00:00.123Z');
  });

  it('names every bad field, and changes nothing', async () => {
    const { webhook } = await created();
    const res = await patch(webhook.id, {
      url: 'http://93.184.215.14/x',
      eventTypes: [],
      enabled: 'yes',
      description: 'fine',
      id: 'whk_other',
    });
    expect(res.status).toBe(422);
    expect(res.body?.fields).toEqual({
      url: 'must use https in live',
      eventTypes: 'must name at least one event type',
      enabled: 'must be true or false',
      id: 'is set by the server and cannot be sent',
    });
    expect((await get(webhook.id)).body).toEqual({ webhook });
  });

  it('answers 400 for a body that is not a JSON object', async () => {
    const { webhook } = await created();
    for (const body of [[1], 'text', null]) {
      const res = await patch(webhook.id, body);
      expect(res.status).toBe(400);
    }
  });
});

describe('enabling and disabling', () => {
  it('disables on request, and enables again clearing the failing state', async () => {
    const { webhook } = await created();
    const before = await dbNow();
    const disabled = answerOf(await patch(webhook.id, { enabled: false })).webhook;
    expect(disabled).toMatchObject({ status: 'disabled', disabledReason: 'requested' });
    expect(new Date(disabled.disabledAt!).getTime()).toBeGreaterThanOrEqual(before.getTime());
    expect(disabled.updatedAt).toBe(disabled.disabledAt);

    // Disabling again changes nothing, a reason set by the delivery included.
    await gateway.deps.db
      .updateTable('webhook_endpoints')
      .set({ disabled_reason: 'failing', failing_since: '2030-01-01T00:00:00Z' })
      .where('id', '=', webhook.id)
      .execute();
    const again = answerOf(await patch(webhook.id, { enabled: false })).webhook;
    expect(again).toMatchObject({
      status: 'disabled',
      disabledReason: 'failing',
      disabledAt: disabled.disabledAt,
      failingSince: '2030-01-01T00:00:00.000Z',
      updatedAt: disabled.updatedAt,
    });

    const enabled = answerOf(await patch(webhook.id, { enabled: true })).webhook;
    expect(enabled).toMatchObject({
      status: 'enabled',
      disabledReason: null,
      disabledAt: null,
      failingSince: null,
    });
    expect(await endpointRow(webhook.id)).toMatchObject({
      disabled_at: null,
      disabled_reason: null,
      failing_since: null,
    });
  });

  it('keeps the failing state of an enabled endpoint sent enabled: true', async () => {
    const { webhook } = await created();
    await gateway.deps.db
      .updateTable('webhook_endpoints')
      .set({ failing_since: '2030-01-01T00:00:00Z' })
      .where('id', '=', webhook.id)
      .execute();
    const res = answerOf(await patch(webhook.id, { enabled: true })).webhook;
    expect(res.failingSince).toBe('2030-01-01T00:00:00.000Z');
  });
});

describe('POST /webhooks/{id}/rotate-secret', () => {
  it('shows a new secret, and keeps the previous one signing for 24 hours', async () => {
    const { webhook, secret: first } = await created();
    const before = await dbNow();
    const res = await rotate(webhook.id);
    expect(res.status).toBe(200);
    const { webhook: rotated, secret: second } = answerOf(res);
    expect(second).toMatch(/^whsec_/);
    expect(second).not.toBe(first);
    const expires = new Date(rotated.previousSecretExpiresAt!).getTime();
    expect(expires - before.getTime()).toBeGreaterThanOrEqual(24 * 3600_000);
    expect(expires - before.getTime()).toBeLessThan(24 * 3600_000 + 60_000);
    expect(rotated.updatedAt).not.toBe(webhook.updatedAt);

    const box = secretBoxOf(loadConfig(process.env));
    let row = await endpointRow(webhook.id);
    expect(box.open(row.secret)).toBe(second);
    expect(box.open(row.previous_secret!)).toBe(first);
    expect(row.previous_secret_expires_at?.toISOString()).toBe(rotated.previousSecretExpiresAt);
    expect((await get(webhook.id)).body).toEqual({ webhook: rotated });
    expect((await get(webhook.id)).text).not.toContain('whsec_');

    // A second rotation replaces the previous one, still valid, with the one it rotates out.
    const third = answerOf(await rotate(webhook.id, keyOf(alpha), {})).secret;
    row = await endpointRow(webhook.id);
    expect(box.open(row.secret)).toBe(third);
    expect(box.open(row.previous_secret!)).toBe(second);
  });

  it('shows no previous secret once it expired', async () => {
    const { webhook } = await created();
    await rotate(webhook.id);
    await gateway.deps.db
      .updateTable('webhook_endpoints')
      .set({ previous_secret_expires_at: '2020-01-01T00:00:00Z' })
      .where('id', '=', webhook.id)
      .execute();
    expect(answerOf(await get(webhook.id)).webhook.previousSecretExpiresAt).toBeNull();
  });

  it('takes no fields', async () => {
    const { webhook } = await created();
    const res = await rotate(webhook.id, keyOf(alpha), { secret: 'whsec_mine' });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({
      error: 'invalid_request',
      message: 'This action takes no fields.',
      fields: { secret: 'this action takes no fields' },
    });
    expect((await endpointRow(webhook.id)).previous_secret).toBeNull();
  });
});

it('answers 401 to a publishable key, as every secret-key route', async () => {
  const res = await gateway.api('/api/v1/webhooks', { key: alpha.publishable.live.secret });
  expect(res.status).toBe(401);
});
