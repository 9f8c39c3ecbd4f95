import type { LinkRef } from '@linkservice/link-cache';
import { LinkCache } from '@linkservice/link-cache';
import { createTenant, linkDraft, testEnvironment } from '@linkservice/testing';
import { Redis } from 'ioredis';
import { CreationTransactions } from '@linkservice/creation';
import { CreationGroupWriter } from './creation-group.writer';
import { LinkInserts } from './link-inserts.repository';
import { LoneCreations } from './lone-creation.repository';
import { completed, creation, useCreationHarness, writeOne } from './testing/creation-harness';

// The link host caches "no such link" for aliases it was asked for. A link created under such a
// caller alias must resolve at once: the worker drops those entries after its commit.

const kit = useCreationHarness();
let redis: Redis;
let cache: LinkCache;

beforeAll(() => {
  redis = new Redis(testEnvironment().redisUrl);
  // The worker's key prefix is the deployment's REDIS_PREFIX: the harness's own here.
  cache = new LinkCache(redis, kit.harness.prefix);
});
afterAll(async () => {
  await redis.quit();
});

/** What the link host does for an alias with no link: a lookup, then a negative fill. */
async function rememberMissing(ref: LinkRef): Promise<void> {
  const lookup = await cache.lookup(ref);
  if (lookup.kind !== 'miss' || !(await cache.fill(ref, lookup.generation, null))) {
    throw new Error(`could not cache ${ref.alias} as missing`);
  }
}

describe('creation and the link host cache', () => {
  it('drops negative entries of the created aliases, in the environment created', async () => {
    const app = await createTenant(kit.db);
    const live: LinkRef = { subdomainKey: app.subdomainKey, environment: 'live', alias: 'launch' };
    const test: LinkRef = { ...live, environment: 'test' };
    const other: LinkRef = { ...live, alias: 'not-created' };
    for (const ref of [live, test, other]) await rememberMissing(ref);

    const result = completed(
      await kit.harness.submit(creation(app, [linkDraft({ alias: 'launch' }), linkDraft()])),
    );
    expect(result.results.every((entry) => entry.ok)).toBe(true);

    expect((await cache.lookup(live)).kind).toBe('miss');
    // Untouched: the test host has no such link, and neither has the alias nobody created.
    expect(await cache.lookup(test)).toEqual({ kind: 'hit', resolution: null });
    expect(await cache.lookup(other)).toEqual({ kind: 'hit', resolution: null });
  });

  it('leaves a generated alias alone: nobody can have asked for it (no Redis call per creation)', async () => {
    const app = await createTenant(kit.db);
    const drawn: LinkRef = {
      subdomainKey: app.subdomainKey,
      environment: 'live',
      alias: 'Gen4ted1',
    };
    // Only a guess of the one alias the draw will give could have cached it as missing.
    await rememberMissing(drawn);
    const writer = new CreationGroupWriter(
      new CreationTransactions(kit.db),
      new LinkInserts(),
      new LoneCreations(kit.db),
      {
        linkDomain: kit.harness.linkDomain,
        logger: kit.harness.logger,
        linkCache: cache,
        drawAliases: (count) => Array.from({ length: count }, () => drawn.alias),
      },
    );
    const answer = await writeOne(writer, {
      ...creation(app, [linkDraft()]),
      deadline: Date.now() + 10_000,
    });
    expect(answer).toMatchObject({
      status: 'done',
      result: { results: [{ ok: true, link: { alias: drawn.alias } }] },
    });
    expect(await cache.lookup(drawn)).toEqual({ kind: 'hit', resolution: null });
  });

  it('leaves the cache alone when nothing was created', async () => {
    const app = await createTenant(kit.db);
    const ref: LinkRef = { subdomainKey: app.subdomainKey, environment: 'live', alias: 'taken' };
    completed(await kit.harness.submit(creation(app, [linkDraft({ alias: 'taken' })])));
    await rememberMissing(ref);

    const again = completed(
      await kit.harness.submit(creation(app, [linkDraft({ alias: 'taken' })])),
    );
    expect(again.results[0]?.ok).toBe(false);
    expect(await cache.lookup(ref)).toEqual({ kind: 'hit', resolution: null });
  });
});
