import { LINK_DRAFT_DEFAULTS, toLink } from '@linkservice/contracts';
import {
  createLinksJobResultSchema,
  createLinksPayloadSchema,
  creationQueuePrefix,
} from './creation-job.contract';
import { redisOptionsFromUrl } from './redis-options';

const entry = {
  index: 0,
  draft: { ...LINK_DRAFT_DEFAULTS, webFallbackUrl: 'https://example.com/' },
};
const payload = {
  requestId: 'crt_0b6f',
  appId: 'app_1',
  environment: 'live',
  entries: [entry],
  creationBudget: 1,
  deadline: 1_900_000_000_000,
};

describe('create-links job contract', () => {
  it('accepts a well-formed payload', () => {
    expect(createLinksPayloadSchema.parse(payload)).toEqual(payload);
  });

  it.each(['', 'crt:1', '12345'])('refuses %j as a request id (BullMQ job id rules)', (id) => {
    expect(createLinksPayloadSchema.safeParse({ ...payload, requestId: id }).success).toBe(false);
  });

  it('carries a deepLinkData member named __proto__ through JSON, as BullMQ sends a payload', () => {
    const deepLinkData = JSON.parse('{"__proto__":{"x":1},"a":1}') as Record<string, unknown>;
    const sent = { ...payload, entries: [{ index: 0, draft: { ...entry.draft, deepLinkData } }] };
    const parsed = createLinksPayloadSchema.parse(JSON.parse(JSON.stringify(sent)));
    const received = parsed.entries[0]?.draft.deepLinkData;
    expect(received && Object.hasOwn(received, '__proto__')).toBe(true);
    expect(JSON.stringify(received)).toBe('{"__proto__":{"x":1},"a":1}');
    expect(Object.getPrototypeOf(received)).toBe(Object.prototype);
  });

  it('refuses a deepLinkData that is not an object or null', () => {
    for (const deepLinkData of [[], 'text', 1, true]) {
      const draft = { ...entry.draft, deepLinkData };
      expect(
        createLinksPayloadSchema.safeParse({ ...payload, entries: [{ index: 0, draft }] }).success,
      ).toBe(false);
    }
  });

  it('needs at least one entry and a non-negative budget', () => {
    expect(createLinksPayloadSchema.safeParse({ ...payload, entries: [] }).success).toBe(false);
    expect(createLinksPayloadSchema.safeParse({ ...payload, creationBudget: -1 }).success).toBe(
      false,
    );
  });

  it("puts a link read back through jsonb into toLink's key order", () => {
    const now = new Date('2030-01-01T00:00:00Z');
    const link = toLink(
      {
        id: 'lnk_1',
        app_id: 'app_1',
        environment: 'live',
        alias: 'spring',
        web_fallback_url: 'https://example.com/',
        ios_fallback_url: null,
        deep_link_data: { b: 1, aa: 2 },
        title: null,
        campaign: 'c',
        channel: null,
        feature: null,
        tags: ['x'],
        expires_at: null,
        archived_at: null,
        click_count: 0,
        created_at: now,
        updated_at: now,
      },
      { subdomainKey: 'acme', linkDomain: 'links.test', now },
    );
    // jsonb's order: shorter keys first, then bytewise.
    const shuffled = Object.fromEntries(
      Object.entries(link).sort(([a], [b]) => a.length - b.length || (a < b ? -1 : 1)),
    );
    expect(JSON.stringify(shuffled)).not.toBe(JSON.stringify(link));
    const parsed = createLinksJobResultSchema.parse({
      status: 'done',
      result: { results: [{ index: 0, ok: true, link: shuffled }] },
    });
    if (parsed.status !== 'done') throw new Error('expected done');
    const entry = parsed.result.results.at(0);
    if (!entry?.ok) throw new Error('expected a created entry');
    expect(JSON.stringify(entry.link)).toBe(JSON.stringify(link));
  });

  it('tells a done result from an abandoned one', () => {
    expect(
      createLinksJobResultSchema.parse({ status: 'done', result: { results: [] } }).status,
    ).toBe('done');
    expect(
      createLinksJobResultSchema.safeParse({ status: 'abandoned', reason: 'whatever' }).success,
    ).toBe(false);
  });
});

describe('creationQueuePrefix', () => {
  it("tags the queue's keys on a cluster, and keeps 0.1's names on a single Redis", () => {
    expect(creationQueuePrefix('ls', true)).toBe('ls:{link-creations}');
    expect(creationQueuePrefix('ls', false)).toBe('ls');
  });
});

describe('redisOptionsFromUrl', () => {
  it('reads host, port, credentials, database and TLS', () => {
    expect(redisOptionsFromUrl('rediss://user:p%40ss@cache.internal:6380/2')).toEqual({
      host: 'cache.internal',
      port: 6380,
      username: 'user',
      password: 'p@ss',
      db: 2,
      tls: {},
    });
    expect(redisOptionsFromUrl('redis://127.0.0.1')).toEqual({ host: '127.0.0.1', port: 6379 });
  });
});
