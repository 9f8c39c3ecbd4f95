import { randomUUID } from 'node:crypto';
import { LINK_FIELD_EXAMPLES, toLink } from '@linkservice/contracts';
import type { CreateLinksJobResult, CreateLinksPayload } from '@linkservice/creation';
import { CreationTransactions } from '@linkservice/creation';
import type { Database } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { createTenant, eventually, linkDraft, linksOf, testDatabase } from '@linkservice/testing';
import { Kysely, PostgresDialect, sql } from 'kysely';
import { CreationGroupWriter } from './creation-group.writer';
import { ALIAS_IN_USE, ALIAS_RESERVED } from './creation-plan';
import { LinkInserts } from './link-inserts.repository';
import type { LoneAttempt } from './lone-creation.repository';
import { LoneCreations } from './lone-creation.repository';
import {
  createSubscribedTenant,
  createdLinks,
  creation,
  linkCounts,
  requestRow,
  useCreationHarness,
  writeOne,
} from './testing/creation-harness';

const kit = useCreationHarness();

type FallbackReason = Extract<LoneAttempt, { kind: 'not_created' }>['reason'];

/**
 * A writer whose every statement is counted (one per round trip: the transaction's BEGIN with
 * its bounds is one), and whose lone statement's fallbacks are recorded.
 */
function countingWriter() {
  /** The first word of each statement; `LONE` for the lone statement. */
  const statements: string[] = [];
  const fallbacks: FallbackReason[] = [];
  const counted = new Kysely<Database>({
    dialect: new PostgresDialect({ pool: kit.pool }),
    log: (event) => {
      const text = event.query.sql;
      statements.push(
        text.includes('SKIP LOCKED') ? 'LONE' : (text.trim().split(/\s+/, 1)[0] ?? ''),
      );
    },
  });
  const writer = new CreationGroupWriter(
    new CreationTransactions(counted),
    new LinkInserts(),
    new LoneCreations(counted),
    {
      linkDomain: kit.harness.linkDomain,
      logger: kit.harness.logger,
      onLoneFallback: (reason) => fallbacks.push(reason),
    },
  );
  return { writer, statements, fallbacks };
}

function lone(
  app: { appId: string },
  draft = linkDraft(),
  options: { environment?: 'live' | 'test'; creationBudget?: number; deadlineMs?: number } = {},
): CreateLinksPayload {
  return {
    ...creation(app, [draft], options),
    deadline: Date.now() + (options.deadlineMs ?? 10_000),
  };
}

function done(answer: CreateLinksJobResult) {
  if (answer.status !== 'done') throw new Error(`expected done, got ${answer.reason}`);
  return answer.result;
}

/** The results stored, the answer and toLink of the row a GET reads, all alike as text. */
async function expectStoredAsAnswered(payload: CreateLinksPayload, answer: CreateLinksJobResult) {
  const result = done(answer);
  const stored = await requestRow(kit.db, payload.requestId);
  expect(stored?.status).toBe('done');
  expect(stored?.results).toEqual(result);
  const [link] = createdLinks(result.results);
  const [row] = (await linksOf(kit.db, payload.appId)).filter(({ id }) => id === link?.id);
  if (!link || !row) throw new Error('no link created');
  const subdomainKey = (
    await kit.db
      .selectFrom('apps')
      .select('subdomain_key')
      .where('id', '=', payload.appId)
      .executeTakeFirstOrThrow()
  ).subdomain_key;
  const read = toLink(row, { subdomainKey, linkDomain: kit.harness.linkDomain });
  // As text: key order too (deepLinkData in jsonb's order, as every read shows it).
  expect(JSON.stringify(link)).toBe(JSON.stringify(read));
  return link;
}

describe('a lone creation in one statement', () => {
  it('creates a link with a generated alias in one statement, storing what it answers', async () => {
    const app = await createTenant(kit.db);
    const { writer, statements, fallbacks } = countingWriter();
    const payload = lone(app, linkDraft({ title: 'Hello', tags: ['a', 'b'] }));

    const answer = await writeOne(writer, payload);

    expect(statements).toEqual(['LONE']);
    expect(fallbacks).toEqual([]);
    const link = await expectStoredAsAnswered(payload, answer);
    expect(link).toMatchObject({
      alias: expect.stringMatching(/^[A-Za-z0-9]{8}$/) as unknown,
      url: `https://${app.subdomainKey}.links.test/${link.alias}`,
      title: 'Hello',
      tags: ['a', 'b'],
      status: 'active',
      clickCount: 0,
      archivedAt: null,
    });
    expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 1, test: 0 });
  });

  it('answers every field as the stored row reads, caller alias, on the test host', async () => {
    const app = await createTenant(kit.db);
    const { writer, statements } = countingWriter();
    const payload = lone(app, linkDraft({ alias: 'every-field', ...LINK_FIELD_EXAMPLES }), {
      environment: 'test',
    });

    const link = await expectStoredAsAnswered(payload, await writeOne(writer, payload));

    expect(statements).toEqual(['LONE']);
    expect(link.url).toBe(`https://${app.subdomainKey}-test.links.test/every-field`);
    expect(link.expiresAt).toBe(LINK_FIELD_EXAMPLES.expiresAt);
    expect(JSON.stringify(link.deepLinkData)).toBe(
      '{"nested":{"ok":true,"ids":[1,2.5,null]},"screen":"product"}',
    );
    expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 0, test: 1 });
  });

  it('keeps the entry index of a batch with one valid entry', async () => {
    const app = await createTenant(kit.db);
    const { writer, statements } = countingWriter();
    const payload: CreateLinksPayload = {
      ...lone(app),
      entries: [{ index: 3, draft: linkDraft() }],
    };
    const result = done(await writeOne(writer, payload));
    expect(statements).toEqual(['LONE']);
    expect(result.results.map(({ index, ok }) => [index, ok])).toEqual([[3, true]]);
    expect((await requestRow(kit.db, payload.requestId))?.results).toEqual(result);
  });

  it('writes the link.created event in the same statement, with the trace context', async () => {
    const app = await createSubscribedTenant(kit.db);
    const { writer, statements } = countingWriter();
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    const payload = { ...lone(app), traceparent };

    const [link] = createdLinks(done(await writeOne(writer, payload)).results);

    expect(statements).toEqual(['LONE']);
    const events = await kit.db
      .selectFrom('webhook_events')
      .select(['subject', 'traceparent', 'snapshot'])
      .where('app_id', '=', app.appId)
      .execute();
    expect(events.map(({ subject, traceparent: trace }) => [subject, trace])).toEqual([
      [link?.id, traceparent],
    ]);
    // The stored row as insertLinks' events snapshot it: to_jsonb of the RETURNING columns
    // (not search_text, nor the click_count column the link_clicks table replaced).
    const { rows } = await sql<{ row: unknown }>`
      SELECT to_jsonb(links) - 'search_text' - 'click_count' AS row FROM links WHERE id = ${link?.id ?? ''}`.execute(
      kit.db,
    );
    expect(events[0]?.snapshot).toEqual(rows[0]?.row);
    const deliveries = await kit.db
      .selectFrom('webhook_deliveries')
      .select('id')
      .where('subject', '=', link?.id ?? '')
      .execute();
    expect(deliveries).toHaveLength(1);
  });

  it('holds the plan allowance exact among concurrent lone statements and transactions', async () => {
    const app = await createTenant(kit.db, { linkAllowance: 10 });
    const { writer, statements, fallbacks } = countingWriter();
    for (let i = 0; i < 3; i++) done(await writeOne(writer, lone(app)));
    expect(statements).toEqual(['LONE', 'LONE', 'LONE']);
    // Then lone requests race each other and two-entry requests, which always take the
    // transaction: a lone statement finds the app's row locked (and gives way) or locks it and
    // reads the counts of its latest version.
    const payloads = Array.from({ length: 24 }, (_, i) =>
      i % 4 === 3
        ? { ...creation(app, [linkDraft(), linkDraft()]), deadline: Date.now() + 20_000 }
        : lone(app, linkDraft(), { deadlineMs: 20_000 }),
    );
    const answers = await Promise.all(payloads.map((payload) => writeOne(writer, payload)));

    const created = answers.flatMap((answer) => createdLinks(done(answer).results));
    expect(created).toHaveLength(7);
    expect(await linksOf(kit.db, app.appId)).toHaveLength(10);
    expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 10, test: 0 });
    expect(fallbacks.length).toBeGreaterThan(0);
  });

  describe('falls back to the usual transaction, which answers as before', () => {
    it('a taken caller alias', async () => {
      const app = await createTenant(kit.db);
      done(await writeOne(kit.writer(), lone(app, linkDraft({ alias: 'taken' }))));
      const { writer, statements, fallbacks } = countingWriter();

      const result = done(await writeOne(writer, lone(app, linkDraft({ alias: 'taken' }))));

      expect(fallbacks).toEqual(['no_row']);
      expect(statements.length).toBeGreaterThan(1);
      expect(result.results).toEqual([
        expect.objectContaining({ ok: false, fieldErrors: { alias: ALIAS_IN_USE } }),
      ]);
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 1, test: 0 });
    });

    it('the plan allowance reached', async () => {
      const app = await createTenant(kit.db, { linkAllowance: 1 });
      done(await writeOne(kit.writer(), lone(app)));
      const { writer, fallbacks } = countingWriter();

      const result = done(await writeOne(writer, lone(app)));

      expect(fallbacks).toEqual(['no_row']);
      expect(result.stoppedEarly?.reason).toBe('plan_limit_reached');
      expect(result.results).toEqual([
        expect.objectContaining({ index: 0, ok: false, error: 'plan_limit_reached' }),
      ]);
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 1, test: 0 });
    });

    it('no creation budget: the usual transaction, without the lone statement', async () => {
      const app = await createTenant(kit.db);
      const { writer, statements, fallbacks } = countingWriter();

      const result = done(await writeOne(writer, lone(app, linkDraft(), { creationBudget: 0 })));

      expect(fallbacks).toEqual([]);
      expect(statements[0]).toBe('BEGIN;');
      expect(result.stoppedEarly?.reason).toBe('rate_limited');
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 0, test: 0 });
    });

    it('a reserved alias: the usual transaction refuses it', async () => {
      const app = await createTenant(kit.db);
      const { writer, statements } = countingWriter();
      const result = done(await writeOne(writer, lone(app, linkDraft({ alias: 'api' }))));
      expect(statements[0]).toBe('BEGIN;');
      expect(result.results).toEqual([
        expect.objectContaining({ ok: false, fieldErrors: { alias: ALIAS_RESERVED } }),
      ]);
    });

    it('an expiresAt not in the normal form: the usual transaction creates it', async () => {
      // The gateway sends formatExpiry's text; anything else (here milliseconds) is left to the
      // transaction, whose answer is toLink of the stored row.
      const app = await createTenant(kit.db);
      const { writer, statements } = countingWriter();
      const draft = linkDraft({ expiresAt: '2099-01-01T00:00:00.500Z' });
      const [link] = createdLinks(done(await writeOne(writer, lone(app, draft))).results);
      expect(statements[0]).toBe('BEGIN;');
      expect(link.expiresAt).toBe('2099-01-01T00:00:00Z');
    });

    it('a deadline past: nothing is created', async () => {
      const app = await createTenant(kit.db);
      const { writer, statements } = countingWriter();
      const answer = await writeOne(writer, lone(app, linkDraft(), { deadlineMs: -1 }));
      expect(answer).toEqual({ status: 'abandoned', reason: 'deadline_passed' });
      expect(statements).toEqual([]);
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 0, test: 0 });
    });

    it('a request the gateway abandoned already', async () => {
      const app = await createTenant(kit.db);
      const payload = lone(app);
      await kit.db
        .insertInto('creation_requests')
        .values({ id: payload.requestId, app_id: app.appId, status: 'abandoned' })
        .execute();
      const { writer, fallbacks } = countingWriter();

      const answer = await writeOne(writer, payload);

      expect(fallbacks).toEqual(['no_row']);
      expect(answer).toEqual({ status: 'abandoned', reason: 'abandoned_by_gateway' });
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 0, test: 0 });
    });

    it('a redelivery of a request done: the same result, nothing more created', async () => {
      const app = await createTenant(kit.db);
      const payload = lone(app);
      const first = await writeOne(kit.writer(), payload);
      const { writer, fallbacks } = countingWriter();

      const again = await writeOne(writer, payload);

      expect(fallbacks).toEqual(['no_row']);
      expect(again).toEqual(first);
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 1, test: 0 });
    });

    it('the app row locked by another creation: the lone statement never waits for it', async () => {
      const app = await createTenant(kit.db);
      const { writer, fallbacks } = countingWriter();
      const holder = await kit.pool.connect();
      try {
        await holder.query('BEGIN');
        await holder.query('SELECT 1 FROM apps WHERE id = $1 FOR NO KEY UPDATE', [app.appId]);
        const writing = writeOne(writer, lone(app));
        // The usual transaction queues on the lock: it is still waiting once the lone
        // statement has given up.
        await eventually(() => fallbacks.length > 0, { what: 'the lone statement given up' });
        expect(fallbacks).toEqual(['no_row']);
        await holder.query('COMMIT');
        const result = done(await writing);
        expect(createdLinks(result.results)).toHaveLength(1);
      } finally {
        await holder.query('ROLLBACK').catch(() => undefined);
        holder.release();
      }
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 1, test: 0 });
    });

    it('a settle still open on the request: the lone statement waits briefly, then the transaction', async () => {
      const app = await createTenant(kit.db);
      const payload = lone(app);
      const { writer, fallbacks } = countingWriter();
      const settle = await kit.pool.connect();
      try {
        await settle.query('BEGIN');
        await settle.query(
          `INSERT INTO creation_requests (id, app_id, status) VALUES ($1, $2, 'abandoned')`,
          [payload.requestId, app.appId],
        );
        const writing = writeOne(writer, payload);
        await eventually(() => fallbacks.length > 0, { what: 'the lone statement given up' });
        expect(fallbacks).toEqual(['lock_wait']);
        await settle.query('COMMIT');
        expect(await writing).toEqual({ status: 'abandoned', reason: 'abandoned_by_gateway' });
      } finally {
        await settle.query('ROLLBACK').catch(() => undefined);
        settle.release();
      }
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 0, test: 0 });
      expect(await linksOf(kit.db, app.appId)).toEqual([]);
    });

    it('an unknown app: the usual transaction reports it', async () => {
      const { writer, fallbacks } = countingWriter();
      await expect(writeOne(writer, lone({ appId: newId('app') }))).rejects.toThrow(
        /no app app_.* in this database/,
      );
      expect(fallbacks).toEqual(['no_row']);
    });
  });

  describe('the statement on its own', () => {
    const attempt = (payload: CreateLinksPayload, lockTimeoutMs: number) => {
      const [entry] = payload.entries;
      if (!entry) throw new Error('no entry');
      return new LoneCreations(kit.db).create({
        requestId: payload.requestId,
        appId: payload.appId,
        environment: payload.environment,
        deadline: payload.deadline,
        index: entry.index,
        id: newId('lnk'),
        alias: entry.draft.alias ?? `g${randomUUID().slice(0, 7)}`,
        draft: entry.draft,
        traceparent: '',
        linkDomain: kit.harness.linkDomain,
        lockTimeoutMs,
      });
    };

    it('a request row committed while it waits: the whole statement rolls back, link included', async () => {
      const app = await createTenant(kit.db);
      const payload = lone(app, linkDraft({ alias: 'never-stored' }));
      const settle = await kit.pool.connect();
      try {
        await settle.query('BEGIN');
        await settle.query(
          `INSERT INTO creation_requests (id, app_id, status) VALUES ($1, $2, 'abandoned')`,
          [payload.requestId, app.appId],
        );
        const settlePid = (await settle.query<{ pid: number }>('SELECT pg_backend_pid() AS pid'))
          .rows[0]?.pid;
        const attempting = attempt(payload, 10_000);
        await eventually(async () => (await blockedBy(settlePid ?? 0)) > 0, {
          what: 'the lone statement waiting for the settle',
        });
        await settle.query('COMMIT');
        expect(await attempting).toEqual({ kind: 'not_created', reason: 'already_decided' });
      } finally {
        await settle.query('ROLLBACK').catch(() => undefined);
        settle.release();
      }
      expect(await linksOf(kit.db, app.appId)).toEqual([]);
      expect(await linkCounts(kit.db, app.appId)).toEqual({ live: 0, test: 0 });
      expect((await requestRow(kit.db, payload.requestId))?.status).toBe('abandoned');
    });

    it('leaves no session setting behind (lock_timeout holds for its own statement only)', async () => {
      const app = await createTenant(kit.db);
      // One connection: the SHOW after the statement runs in the same session.
      const single = testDatabase(1);
      try {
        const show = () => sql<{ lock_timeout: string }>`SHOW lock_timeout`.execute(single.db);
        const before = (await show()).rows;
        const created = await new LoneCreations(single.db).create({
          requestId: `crt_${randomUUID()}`,
          appId: app.appId,
          environment: 'live',
          deadline: Date.now() + 10_000,
          index: 0,
          id: newId('lnk'),
          alias: 'session-check',
          draft: linkDraft(),
          traceparent: '',
          linkDomain: kit.harness.linkDomain,
          lockTimeoutMs: 37,
        });
        expect(created.kind).toBe('created');
        expect(before).not.toEqual([{ lock_timeout: '37ms' }]);
        expect((await show()).rows).toEqual(before);
      } finally {
        await single.close();
      }
    });
  });
});

/** How many backends wait for a lock `pid` holds. */
async function blockedBy(pid: number): Promise<number> {
  const { rows } = await sql<{ waiting: number }>`
    SELECT count(*)::int AS waiting FROM pg_stat_activity
    WHERE ${pid}::int = ANY (pg_blocking_pids(pid))`.execute(kit.db);
  return rows[0]?.waiting ?? 0;
}
