import type { LookupAddress } from 'node:dns';
import { Webhook } from 'standardwebhooks';
import { pinnedLookup } from './delivery-attempt';
import { deliveryHeaders } from './delivery-signing';

const secret = `whsec_${Buffer.alloc(32, 3).toString('base64')}`;
const previous = `whsec_${Buffer.alloc(32, 4).toString('base64')}`;

describe('deliveryHeaders', () => {
  const body = JSON.stringify({
    type: 'link.created',
    timestamp: '2026-01-01T00:00:00.000Z',
    data: {},
  });

  test("Standard Webhooks' headers, verified by its own package", () => {
    const sentAt = new Date();
    const headers = deliveryHeaders({ eventId: 'evt_1', sentAt, body, secrets: [secret] });
    expect(headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'linkservice-webhooks',
      'webhook-id': 'evt_1',
      'webhook-timestamp': String(Math.floor(sentAt.getTime() / 1000)),
    });
    expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(previous).verify(body, headers)).toThrow();
    // The body as sent, byte for byte: another one does not verify.
    expect(() => new Webhook(secret).verify(`${body} `, headers)).toThrow();
  });

  test('during a rotation both secrets sign, space-separated', () => {
    const headers = deliveryHeaders({
      eventId: 'evt_1',
      sentAt: new Date(),
      body,
      secrets: [secret, previous],
    });
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(secret).verify(body, headers)).toBeTruthy();
    expect(new Webhook(previous).verify(body, headers)).toBeTruthy();
  });
});

describe('pinnedLookup', () => {
  const addresses: LookupAddress[] = [
    { address: '203.0.113.9', family: 4 },
    { address: '2001:db8::9', family: 6 },
  ];
  const lookup = (options: Parameters<ReturnType<typeof pinnedLookup>>[1]) =>
    new Promise<{ error: Error | null; address: unknown; family?: number }>((resolve) => {
      pinnedLookup(addresses)('anything.example', options, (error, address, family) => {
        resolve({ error, address, family });
      });
    });

  test('answers only the checked addresses, whatever the name', async () => {
    expect(await lookup({ all: true })).toMatchObject({ error: null, address: addresses });
    expect(await lookup({})).toMatchObject({ address: '203.0.113.9', family: 4 });
    expect(await lookup({ family: 6 })).toMatchObject({ address: '2001:db8::9', family: 6 });
    expect(await lookup({ family: 'IPv6', all: true })).toMatchObject({ address: [addresses[1]] });
  });

  test('no checked address of the family asked: not found', async () => {
    const only4 = await new Promise<Error | null>((resolve) => {
      pinnedLookup([addresses[0]])('x', { family: 6 }, (error) => resolve(error));
    });
    expect(only4).toMatchObject({ code: 'ENOTFOUND' });
  });
});
