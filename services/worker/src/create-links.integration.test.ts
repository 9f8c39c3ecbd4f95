import { randomUUID } from 'node:crypto';
import { isReservedAlias, LINK_FIELD_EXAMPLES, toLink } from '@linkservice/contracts';
import { newId } from '@linkservice/db';
import type { CreateLinksGroupResult, CreateLinksJobResult } from '@linkservice/creation';
import {
  COMMIT_GRACE_MS,
  CREATE_LINKS_JOB,
  CreationRequestsRepository,
  CreationTransactions,
} from '@linkservice/creation';
import { createTenant, eventually, linkDraft, linksOf } from '@linkservice/testing';
import { LinkInserts } from './link-inserts.repository';
import {
  CreationHarness,
  completed,
  createdLinks,
  creation,
  writeOne,
  linkCounts,
  newHarness,
  requestRow,
  useCreationHarness,
} from './testing/creation-harness';

const kit = useCreationHarness();

describe('creating links through the queue', () => {
  it('creates one link with a generated alias and records the request', async () => {
    const app = await createTenant(kit.db);
    const payload = creation(app, [linkDraft({ title: 'Hello', tags: ['a', 'b'] })]);
    const result = completed(await kit.harness.submit(payload));

    expect(result.stoppedEarly).toBeUndefined();
    expect(result.results).toHaveLength(1);
    const entry = result.results[0];
    if (!entry.ok) throw new Error('entry 0 was not created');
    expect(entry.index).toBe(0);
    expect(entry.link.alias).toMatch(/^[A-Za-z0-9]{8}$/);
    expect(entry.link).toMatchObject({
      url: `https://${app.subdomainKey}.links.test/${entry.link.alias}`,
      environment: 'live',
      title: 'Hello',
      tags: ['a', 'b'],
      status: 'active',
      clickCount: 0,
      archivedAt: null,
    });

    const stored = await linksOf(kit.db, app.appId);
    expect(stored.map((row) => [row.id, row.alias])).toEqual([[entry.link.id, entry.link.alias]]);
    expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 1, test: 0 });
    const request = await requestRow(kit.db, payload.requestId);
    expect(request?.status).toBe('done');
    expect(request?.results).toEqual(result);
  });

  it('answers each link exactly as its stored row reads, every field set', async () => {
    const app = await createTenant(kit.db);
    const payload = creation(app, [
      linkDraft({ alias: 'full', ...LINK_FIELD_EXAMPLES }),
      linkDraft(),
    ]);
    const result = completed(await kit.harness.submit(payload));
    const stored = await linksOf(kit.db, app.appId);
    const context = { subdomainKey: app.subdomainKey, linkDomain: kit.harness.linkDomain };
    // As text: key order too (the data above is not in jsonb's order: shorter keys first).
    const answered = createdLinks(result.results).map((link) => JSON.stringify(link));
    const read = stored.map((row) => JSON.stringify(toLink(row, context)));
    expect(answered.sort()).toEqual(read.sort());
    expect(answered).toHaveLength(2);
    expect(JSON.stringify(createdLinks(result.results)[0]?.deepLinkData)).toBe(
      '{"nested":{"ok":true,"ids":[1,2.5,null]},"screen":"product"}',
    );
  });

  it('redraws a generated alias that collides with an existing link, and stores what it answers', async () => {
    const app = await createTenant(kit.db);
    completed(await kit.harness.submit(creation(app, [linkDraft({ alias: 'Taken007' })])));
    const draws: string[][] = [];
    const drawAliases = (count: number): string[] => {
      const drawn = draws.length === 0 ? ['Taken007', 'Fresh001'] : ['Fresh002'];
      draws.push(drawn);
      return drawn.slice(0, count);
    };
    const payload = {
      ...creation(app, [linkDraft({ title: 'one' }), linkDraft({ title: 'two' })]),
      deadline: Date.now() + 10_000,
    };
    const answer = await writeOne(kit.writer(drawAliases), payload);
    if (answer.status !== 'done') throw new Error(`expected done, got ${answer.reason}`);
    expect(draws).toEqual([['Taken007', 'Fresh001'], ['Fresh002']]);
    expect(createdLinks(answer.result.results).map((link) => [link.title, link.alias])).toEqual([
      ['one', 'Fresh002'],
      ['two', 'Fresh001'],
    ]);
    expect((await requestRow(kit.db, payload.requestId))?.results).toEqual(answer.result);
    expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 3, test: 0 });
    expect((await linksOf(kit.db, app.appId)).map((row) => row.alias).sort()).toEqual([
      'Fresh001',
      'Fresh002',
      'Taken007',
    ]);
  });

  it('creates many in one job, in order, with caller and generated aliases, on the test host', async () => {
    const app = await createTenant(kit.db);
    const drafts = [
      linkDraft({ alias: 'spring-sale', deepLinkData: { screen: 'sale', id: 7 } }),
      linkDraft(),
      linkDraft({ alias: 'Promo_1', expiresAt: '2099-01-01T00:00:00Z' }),
      linkDraft({ iosFallbackUrl: 'https://example.com/ios' }),
    ];
    const result = completed(
      await kit.harness.submit(creation(app, drafts, { environment: 'test' })),
    );
    const links = createdLinks(result.results);
    expect(result.results.map((r) => [r.index, r.ok])).toEqual([
      [0, true],
      [1, true],
      [2, true],
      [3, true],
    ]);
    expect(links.map((l) => l.alias).slice(0, 1)).toEqual(['spring-sale']);
    expect(links[2]?.alias).toBe('Promo_1');
    expect(links[0]?.deepLinkData).toEqual({ screen: 'sale', id: 7 });
    expect(links[2]?.expiresAt).toBe('2099-01-01T00:00:00Z');
    expect(links[3]?.iosFallbackUrl).toBe('https://example.com/ios');
    for (const link of links) {
      expect(link.environment).toBe('test');
      expect(link.url).toBe(`https://${app.subdomainKey}-test.links.test/${link.alias}`);
    }
    // Ids follow entry order, so "newest first" lists a batch in reverse entry order.
    expect([...links.map((l) => l.id)].sort()).toEqual(links.map((l) => l.id));
    expect(await linksOf(kit.db, app.appId)).toHaveLength(4);
  });

  it('refuses aliases in use (archived included) or repeated in the batch, and creates the rest', async () => {
    const app = await createTenant(kit.db);
    completed(
      await kit.harness.submit(
        creation(app, [linkDraft({ alias: 'existing' }), linkDraft({ alias: 'old' })]),
      ),
    );
    await kit.db
      .updateTable('links')
      .set({ archived_at: new Date() })
      .where('app_id', '=', app.appId)
      .where('alias', '=', 'old')
      .execute();

    const result = completed(
      await kit.harness.submit(
        creation(app, [
          linkDraft({ alias: 'existing' }),
          linkDraft({ alias: 'old' }),
          linkDraft({ alias: 'twice' }),
          linkDraft({ alias: 'twice' }),
          linkDraft({ alias: 'EXISTING' }),
          linkDraft(),
        ]),
      ),
    );
    const summary = result.results.map((r) =>
      r.ok ? [r.index, r.link.alias] : [r.index, r.error, r.fieldErrors?.alias],
    );
    expect(summary).toEqual([
      [0, 'validation_failed', expect.stringContaining('already in use')],
      [1, 'validation_failed', expect.stringContaining('already in use')],
      [2, 'twice'],
      [3, 'validation_failed', expect.stringContaining('earlier entry')],
      [4, 'EXISTING'],
      [5, expect.stringMatching(/^[A-Za-z0-9]{8}$/)],
    ]);
    expect(result.stoppedEarly).toBeUndefined();
    expect(await linksOf(kit.db, app.appId)).toHaveLength(5);

    // The same alias in the other environment is another link.
    const other = completed(
      await kit.harness.submit(
        creation(app, [linkDraft({ alias: 'existing' })], { environment: 'test' }),
      ),
    );
    expect(other.results[0]?.ok).toBe(true);
  });

  it('generates 500 distinct, valid, unreserved aliases in one batch', async () => {
    const app = await createTenant(kit.db);
    const drafts = Array.from({ length: 500 }, () => linkDraft());
    const started = Date.now();
    const result = completed(await kit.harness.submit(creation(app, drafts), 20_000));
    const elapsed = Date.now() - started;
    const aliases = createdLinks(result.results).map((l) => l.alias);
    expect(aliases).toHaveLength(500);
    expect(new Set(aliases).size).toBe(500);
    for (const alias of aliases) {
      expect(alias).toMatch(/^[A-Za-z0-9]{8}$/);
      expect(isReservedAlias(alias)).toBe(false);
    }
    const stored = await linksOf(kit.db, app.appId);
    expect(stored.map((row) => row.alias).sort()).toEqual([...aliases].sort());
    // One multi-row insert: far below what 500 round trips would take on a shared machine.
    expect(elapsed).toBeLessThan(10_000);
  });

  it('keeps the plan allowance exact under concurrent jobs', async () => {
    const app = await createTenant(kit.db, { linkAllowance: 10 });
    const payloads = Array.from({ length: 5 }, () =>
      creation(
        app,
        Array.from({ length: 4 }, () => linkDraft()),
      ),
    );
    const results = (await Promise.all(payloads.map((p) => kit.harness.submit(p)))).map(completed);

    const stored = await linksOf(kit.db, app.appId);
    expect(stored).toHaveLength(10);
    const reported = results.flatMap((r) => createdLinks(r.results).map((l) => l.id));
    expect(reported.sort()).toEqual(stored.map((row) => row.id).sort());

    for (const result of results) {
      const created = createdLinks(result.results).length;
      if (created === 4) {
        expect(result.stoppedEarly).toBeUndefined();
        continue;
      }
      // Stopped at the first entry past the allowance; later entries not tried, not listed.
      expect(result.stoppedEarly).toEqual({
        reason: 'plan_limit_reached',
        atIndex: created,
        message: expect.any(String),
      });
      expect(result.results.map((r) => r.index)).toEqual(
        Array.from({ length: created + 1 }, (_, i) => i),
      );
      expect(result.results[created]).toMatchObject({ ok: false, error: 'plan_limit_reached' });
    }
    expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 10, test: 0 });

    // The allowance counts both environments and archived links.
    await kit.db
      .updateTable('links')
      .set({ archived_at: new Date() })
      .where('app_id', '=', app.appId)
      .execute();
    const more = completed(
      await kit.harness.submit(creation(app, [linkDraft()], { environment: 'test' })),
    );
    expect(more.stoppedEarly?.reason).toBe('plan_limit_reached');
  });

  it('stops with rate_limited when the creation budget is used up', async () => {
    const app = await createTenant(kit.db);
    completed(await kit.harness.submit(creation(app, [linkDraft({ alias: 'taken' })])));
    const result = completed(
      await kit.harness.submit(
        creation(
          app,
          [linkDraft({ alias: 'taken' }), linkDraft(), linkDraft(), linkDraft(), linkDraft()],
          {
            creationBudget: 2,
          },
        ),
      ),
    );
    expect(result.results.map((r) => (r.ok ? 'ok' : r.error))).toEqual([
      'validation_failed',
      'ok',
      'ok',
      'rate_limited',
    ]);
    expect(result.stoppedEarly).toEqual({
      reason: 'rate_limited',
      atIndex: 3,
      message: expect.any(String),
    });
    expect(await linksOf(kit.db, app.appId)).toHaveLength(3);
  });
});

describe('exactly once', () => {
  it('answers a redelivered job with the stored results and creates nothing more', async () => {
    const app = await createTenant(kit.db);
    const payload = creation(app, [linkDraft(), linkDraft({ alias: 'once' })]);
    const first = completed(await kit.harness.submit(payload));

    // The same job again, as BullMQ would redeliver it after a crash past COMMIT.
    const { queue, events } = await kit.harness.rawQueue();
    const again = await queue.add(
      CREATE_LINKS_JOB,
      { ...payload, deadline: Date.now() + 10_000 },
      { jobId: `${payload.requestId}-redelivered` },
    );
    const answer = (await again.waitUntilFinished(events, 10_000)) as CreateLinksJobResult;
    expect(answer).toEqual({ status: 'done', result: first });
    expect(await linksOf(kit.db, app.appId)).toHaveLength(2);
  });

  it('creates nothing for a job past its deadline', async () => {
    const app = await createTenant(kit.db);
    const payload = { ...creation(app, [linkDraft()]), deadline: Date.now() - 1 };
    expect(await writeOne(kit.writer(), payload)).toEqual({
      status: 'abandoned',
      reason: 'deadline_passed',
    });
    expect(await requestRow(kit.db, payload.requestId)).toBeUndefined();
    expect(await linksOf(kit.db, app.appId)).toHaveLength(0);
  });

  it('claims nothing once the database clock is past the deadline', async () => {
    const app = await createTenant(kit.db);
    await new CreationTransactions(kit.db).run(5_000, async (tx) => {
      const claims = await tx.claimAll([
        { requestId: 'crt_db_clock', appId: app.appId, deadline: Date.now() - 50 },
      ]);
      expect(claims.get('crt_db_clock')).toEqual({
        kind: 'answered',
        answer: { status: 'abandoned', reason: 'deadline_passed' },
      });
    });
    expect(await requestRow(kit.db, 'crt_db_clock')).toBeUndefined();
  });

  it('stores no outcome once the database clock is past commitBy, even with every row inserted', async () => {
    const app = await createTenant(kit.db);
    const requestId = `crt_${randomUUID()}`;
    await new CreationTransactions(kit.db).run(5_000, async (tx) => {
      const claims = await tx.claimAll([
        { requestId, appId: app.appId, deadline: Date.now() + 5_000 },
      ]);
      expect(claims.get(requestId)).toMatchObject({ kind: 'claimed' });
      const rows = await new LinkInserts().insertLinks(
        tx,
        [
          {
            id: newId('lnk'),
            app_id: app.appId,
            environment: 'live',
            alias: 'late',
            web_fallback_url: 'https://example.com/late',
          },
        ],
        [''],
      );
      expect(rows.map((row) => row.alias)).toEqual(['late']);
      const outcomes = new Map([[requestId, { results: [] }]]);
      expect(await tx.recordOutcomes(outcomes, Date.now() - 1_000)).toBe(false);
    });
    // Not committed: the transaction rolls back whatever its statements did.
    expect(await linksOf(kit.db, app.appId)).toHaveLength(0);
    expect(await requestRow(kit.db, requestId)).toBeUndefined();
  });

  it('creates nothing for a request the gateway already abandoned', async () => {
    const app = await createTenant(kit.db);
    const payload = { ...creation(app, [linkDraft()]), deadline: Date.now() + 10_000 };
    const settled = await new CreationRequestsRepository(kit.db).abandonOrRead(
      payload.requestId,
      app.appId,
    );
    expect(settled).toEqual({ kind: 'abandoned' });
    expect(await writeOne(kit.writer(), payload)).toEqual({
      status: 'abandoned',
      reason: 'abandoned_by_gateway',
    });
    expect(await linksOf(kit.db, app.appId)).toHaveLength(0);
  });
});

describe('settling when the answer does not come in time', () => {
  let own: CreationHarness | undefined;
  afterEach(async () => {
    await own?.close();
    own = undefined;
  });

  it('answers unavailable within the timeout when no worker runs, and a later worker creates nothing', async () => {
    own = newHarness(kit.db);
    const app = await createTenant(kit.db);
    const payload = creation(app, [linkDraft(), linkDraft({ alias: 'never' })]);

    const started = Date.now();
    const outcome = await own.submit(payload, 400);
    const elapsed = Date.now() - started;
    expect(outcome).toEqual({ kind: 'unavailable', reason: 'timeout' });
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(400 + 1_500);
    expect((await requestRow(kit.db, payload.requestId))?.status).toBe('abandoned');

    // Removal of the waiting job is best effort; add it again as if it had stayed queued.
    own.startWorker();
    const { queue, events } = await own.rawQueue();
    const stale = await queue.add(
      CREATE_LINKS_JOB,
      { ...payload, deadline: Date.now() + 10_000 },
      { jobId: `${payload.requestId}-stale` },
    );
    expect(await stale.waitUntilFinished(events, 10_000)).toEqual({
      status: 'abandoned',
      reason: 'abandoned_by_gateway',
    });
    expect(await linksOf(kit.db, app.appId)).toHaveLength(0);
  });

  it('reads the committed result back when the worker commits after the timeout', async () => {
    own = newHarness(kit.db);
    own.startWorker({ testDelayMs: 700 });
    const app = await createTenant(kit.db);
    const payload = creation(app, [linkDraft(), linkDraft({ alias: 'late' })]);

    const started = Date.now();
    const result = completed(await own.submit(payload, 300));
    expect(Date.now() - started).toBeGreaterThanOrEqual(650);
    const stored = await linksOf(kit.db, app.appId);
    expect(
      createdLinks(result.results)
        .map((l) => l.id)
        .sort(),
    ).toEqual(stored.map((row) => row.id).sort());
    expect(stored).toHaveLength(2);
    expect((await requestRow(kit.db, payload.requestId))?.status).toBe('done');
  });

  it('answers unavailable, bounded, when the worker would commit past the grace period', async () => {
    own = newHarness(kit.db);
    const worker = own.startWorker({ testDelayMs: 300 + COMMIT_GRACE_MS + 1_500 });
    const attemptsEnded: string[] = [];
    worker.on('failed', () => attemptsEnded.push('failed'));
    worker.on('completed', (_job, reply: CreateLinksGroupResult) => {
      attemptsEnded.push(...reply.answers.map(({ answer }) => answer.status));
    });
    const app = await createTenant(kit.db);
    const payload = creation(app, [linkDraft()]);

    const started = Date.now();
    const outcome = await own.submit(payload, 300);
    const elapsed = Date.now() - started;
    expect(outcome.kind).toBe('unavailable');
    // Postgres ends the paused transaction at deadline + grace; the settle wait ends with it.
    expect(elapsed).toBeLessThan(300 + COMMIT_GRACE_MS + 1_500);
    expect((await requestRow(kit.db, payload.requestId))?.status).toBe('abandoned');

    // The worker wakes past the grace period: it gives up without a statement (a statement would
    // fail too: Postgres has ended its session), and nothing is created, then or by a retry.
    await eventually(() => Promise.resolve(attemptsEnded.length > 0 ? true : undefined), {
      timeoutMs: 15_000,
      what: 'the end of the attempt',
    });
    expect(attemptsEnded[0]).toBe('abandoned');
    expect(await linksOf(kit.db, app.appId)).toHaveLength(0);
  });

  it('answers unavailable quickly when Redis cannot be reached, and settles the request', async () => {
    own = new CreationHarness(kit.db, 'redis://127.0.0.1:1', 'unreachable');
    const app = await createTenant(kit.db);
    const payload = creation(app, [linkDraft()]);
    const started = Date.now();
    const outcome = await own.submit(payload, 500);
    expect(outcome.kind).toBe('unavailable');
    expect(Date.now() - started).toBeLessThan(500 + 1_500);
    expect((await requestRow(kit.db, payload.requestId))?.status).toBe('abandoned');
  });
});
