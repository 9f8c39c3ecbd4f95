import type {
  CreateLinksJobResult,
  CreateLinksGroup,
  CreateLinksGroupResult,
  CreateLinksPayload,
} from '@linkservice/creation';
import {
  CREATE_LINKS_GROUP_JOB,
  CREATE_LINKS_JOB,
  CREATE_LINKS_QUEUE,
  createLinksPayloadSchema,
  CreationRequestsRepository,
  redisOptionsFromUrl,
} from '@linkservice/creation';
import { UnrecoverableError, Worker } from 'bullmq';
import { setTimeout } from 'node:timers/promises';
import pg from 'pg';
import {
  createTenant,
  eventually,
  linkDraft,
  linksOf,
  testEnvironment,
} from '@linkservice/testing';
import { ALIAS_IN_USE } from './creation-plan';
import {
  completed,
  createdLinks,
  creation,
  writeOne,
  linkCounts,
  newHarness,
  requestRow,
  useCreationHarness,
} from './testing/creation-harness';

/**
 * Group commit: requests that reach one gateway together travel as one job and one worker
 * transaction, and each is still answered, limited and made exactly-once on its own.
 */
const kit = useCreationHarness();

/** The job a group travelled in: its id is its first request's id. */
async function groupJobOf(first: { requestId: string }): Promise<CreateLinksGroup> {
  const { queue } = await kit.harness.rawQueue();
  const job = await queue.getJob(first.requestId);
  if (!job) throw new Error(`no job ${first.requestId}`);
  expect(job.name).toBe(CREATE_LINKS_GROUP_JOB);
  return job.data as CreateLinksGroup;
}

function withDeadline(
  payload: Omit<CreateLinksPayload, 'deadline'>,
  deadline = Date.now() + 10_000,
): CreateLinksPayload {
  return { ...payload, deadline };
}

describe('group commit', () => {
  it('carries requests that arrive together as one job, each answered with its own links', async () => {
    const [one, two] = await Promise.all([createTenant(kit.db), createTenant(kit.db)]);
    const payloads = [
      creation(one, [linkDraft({ title: 'one-a' })]),
      creation(two, [linkDraft({ title: 'two-a' })]),
      creation(one, [linkDraft({ title: 'one-b' }), linkDraft({ title: 'one-c' })]),
      creation(two, [linkDraft({ title: 'two-b' })], { environment: 'test' }),
    ];
    const outcomes = await Promise.all(payloads.map((payload) => kit.harness.submit(payload)));

    const titles = outcomes.map((outcome) =>
      createdLinks(completed(outcome).results).map((link) => [link.title, link.environment]),
    );
    expect(titles).toEqual([
      [['one-a', 'live']],
      [['two-a', 'live']],
      [
        ['one-b', 'live'],
        ['one-c', 'live'],
      ],
      [['two-b', 'test']],
    ]);
    const group = await groupJobOf(payloads[0]);
    expect(group.requests.map((request) => request.requestId)).toEqual(
      payloads.map((payload) => payload.requestId),
    );
    // Each request's own exactly-once row holds its own answer.
    for (const [index, payload] of payloads.entries()) {
      const row = await requestRow(kit.db, payload.requestId);
      expect(row).toMatchObject({ status: 'done', results: completed(outcomes[index]) });
    }
    expect(await linkCounts(kit.db, one.appId)).toEqual({ live: 3, test: 0 });
    expect(await linkCounts(kit.db, two.appId)).toEqual({ live: 1, test: 1 });
  });

  it("keeps the plan allowance exact across a group's requests of one app, in arrival order", async () => {
    const app = await createTenant(kit.db, { linkAllowance: 2 });
    const payloads = [1, 2, 3].map((n) => creation(app, [linkDraft({ title: `n${n}` })]));
    const outcomes = await Promise.all(payloads.map((payload) => kit.harness.submit(payload)));

    expect((await groupJobOf(payloads[0])).requests).toHaveLength(3);
    expect(outcomes.map((outcome) => completed(outcome).results[0]?.ok)).toEqual([
      true,
      true,
      false,
    ]);
    expect(completed(outcomes[2]).results[0]).toMatchObject({ error: 'plan_limit_reached' });
    expect(await linksOf(kit.db, app.appId)).toHaveLength(2);
  });

  it('counts a batch of several requests of one app against its allowance in order', async () => {
    const app = await createTenant(kit.db, { linkAllowance: 3 });
    const payloads = [
      creation(app, [linkDraft(), linkDraft()]),
      creation(app, [linkDraft(), linkDraft()]),
    ];
    const [first, second] = await Promise.all(
      payloads.map((payload) => kit.harness.submit(payload)),
    );
    expect(createdLinks(completed(first).results)).toHaveLength(2);
    expect(completed(second).stoppedEarly).toMatchObject({
      reason: 'plan_limit_reached',
      atIndex: 1,
    });
    expect(await linksOf(kit.db, app.appId)).toHaveLength(3);
  });

  it('treats an alias an earlier request of the group takes as taken for the later ones', async () => {
    const app = await createTenant(kit.db);
    const payloads = [
      creation(app, [linkDraft({ alias: 'shared' })]),
      creation(app, [linkDraft({ alias: 'shared' })]),
      creation(app, [linkDraft({ alias: 'shared' })], { environment: 'test' }),
    ];
    const outcomes = await Promise.all(payloads.map((payload) => kit.harness.submit(payload)));

    expect((await groupJobOf(payloads[0])).requests).toHaveLength(3);
    const [first, second, other] = outcomes.map((outcome) => completed(outcome).results[0]);
    expect(first).toMatchObject({ ok: true, link: { alias: 'shared', environment: 'live' } });
    expect(second).toMatchObject({
      ok: false,
      error: 'validation_failed',
      fieldErrors: { alias: ALIAS_IN_USE },
    });
    expect(other).toMatchObject({ ok: true, link: { alias: 'shared', environment: 'test' } });
  });

  it('answers a request the gateway already abandoned as unavailable, and creates the others', async () => {
    const app = await createTenant(kit.db);
    const kept = creation(app, [linkDraft({ title: 'kept' })]);
    const abandoned = creation(app, [linkDraft({ title: 'abandoned' })]);
    await new CreationRequestsRepository(kit.db).abandonOrRead(abandoned.requestId, app.appId);

    const [keptOutcome, abandonedOutcome] = await Promise.all([
      kit.harness.submit(kept),
      kit.harness.submit(abandoned),
    ]);
    expect((await groupJobOf(kept)).requests).toHaveLength(2);
    expect(createdLinks(completed(keptOutcome).results)).toMatchObject([{ title: 'kept' }]);
    expect(abandonedOutcome).toEqual({ kind: 'unavailable', reason: 'timeout' });
    expect((await linksOf(kit.db, app.appId)).map((row) => row.title)).toEqual(['kept']);
  });

  it('creates nothing for a request of the group past its deadline, and the others as usual', async () => {
    const app = await createTenant(kit.db);
    const late = withDeadline(creation(app, [linkDraft()]), Date.now() - 1);
    const live = withDeadline(creation(app, [linkDraft({ title: 'live' })]));

    const answers = await kit.writer().write([late, live]);
    expect(answers.get(late.requestId)).toEqual({
      status: 'abandoned',
      reason: 'deadline_passed',
    });
    expect(answers.get(live.requestId)).toMatchObject({ status: 'done' });
    expect(await requestRow(kit.db, late.requestId)).toBeUndefined();
    expect((await linksOf(kit.db, app.appId)).map((row) => row.title)).toEqual(['live']);
  });

  it('lets one request that cannot be stored cost the others nothing', async () => {
    const app = await createTenant(kit.db);
    const good = withDeadline(creation(app, [linkDraft({ title: 'good' })]));
    // Postgres refuses NUL in text: the gateway and the job schema refuse it first, so only a
    // request that bypassed both (or a database that changed its mind) fails like this.
    const poison = withDeadline(creation(app, [linkDraft({ title: 'bad\u0000title' })]));
    const alsoGood = withDeadline(creation(app, [linkDraft({ title: 'also good' })]));

    await expect(kit.writer().write([good, poison, alsoGood])).rejects.toThrow();
    expect((await linksOf(kit.db, app.appId)).map((row) => row.title).sort()).toEqual([
      'also good',
      'good',
    ]);
    expect(await requestRow(kit.db, poison.requestId)).toBeUndefined();

    // The job's retry: the committed requests answer from their rows, nothing is created twice.
    const stored = await requestRow(kit.db, good.requestId);
    await expect(kit.writer().write([good, poison, alsoGood])).rejects.toThrow();
    expect(await requestRow(kit.db, good.requestId)).toEqual(stored);
    expect(await linksOf(kit.db, app.appId)).toHaveLength(2);
  });

  it("creates the other apps' requests at once while one app's row is held long", async () => {
    const [busy, free] = await Promise.all([createTenant(kit.db), createTenant(kit.db)]);
    const locker = new pg.Client({ connectionString: testEnvironment().databaseUrl });
    await locker.connect();
    try {
      // What a long creation of the busy app would hold: the row every creation of it locks.
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM apps WHERE id = $1 FOR NO KEY UPDATE', [busy.appId]);
      const blocked = withDeadline(creation(busy, [linkDraft({ title: 'busy' })]));
      const other = withDeadline(creation(free, [linkDraft({ title: 'free' })]));
      const creating = kit.writer().write([blocked, other]);

      // The free app's link is committed while the busy app's row is still held.
      await eventually(async () => (await linksOf(kit.db, free.appId)).length === 1 || false, {
        timeoutMs: 3_000,
        what: "the free app's link",
      });
      expect(await linksOf(kit.db, busy.appId)).toHaveLength(0);
      await locker.query('COMMIT');

      const answers = await creating;
      expect(answers.get(blocked.requestId)).toMatchObject({ status: 'done' });
      expect(answers.get(other.requestId)).toMatchObject({ status: 'done' });
      expect((await linksOf(kit.db, busy.appId)).map((row) => row.title)).toEqual(['busy']);
    } finally {
      await locker.end();
    }
  });

  it('answers a redelivered group from every request’s row and creates nothing more', async () => {
    const app = await createTenant(kit.db);
    const payloads = [
      creation(app, [linkDraft()]),
      creation(app, [linkDraft({ alias: 'redelivered' })]),
    ];
    const first = await Promise.all(payloads.map((payload) => kit.harness.submit(payload)));

    const { queue, events } = await kit.harness.rawQueue();
    const group: CreateLinksGroup = { requests: payloads.map((payload) => withDeadline(payload)) };
    const again = await queue.add(CREATE_LINKS_GROUP_JOB, group, {
      jobId: `${payloads[0].requestId}-redelivered`,
    });
    const reply = (await again.waitUntilFinished(events, 10_000)) as CreateLinksGroupResult;
    expect(reply.answers).toEqual(
      payloads.map((payload, index) => ({
        requestId: payload.requestId,
        answer: { status: 'done', result: completed(first[index]) },
      })),
    );
    expect(await linksOf(kit.db, app.appId)).toHaveLength(2);
  });

  it('gathers requests while a group is on its way, for groupWaitMs at most', async () => {
    const slow = newHarness(kit.db, { groupsInFlight: 1, groupWaitMs: 50 });
    try {
      slow.startWorker({ testDelayMs: 600 });
      const app = await createTenant(kit.db);
      const [first, second, third] = [1, 2, 3].map(() => creation(app, [linkDraft()]));
      const started = Date.now();
      const firstOutcome = slow.submit(first);
      // Arriving while the first group (the only slot) is on its way: they gather, and go
      // together after groupWaitMs, long before the first group's answer.
      await setTimeout(10);
      const later = [slow.submit(second), slow.submit(third)];
      const { queue } = await slow.rawQueue();
      const gathered = await eventually(
        async () => (await queue.getJob(second.requestId)) ?? false,
        {
          timeoutMs: 500,
          what: 'the second group',
        },
      );
      expect(Date.now() - started).toBeLessThan(500);
      expect((gathered.data as CreateLinksGroup).requests.map((r) => r.requestId)).toEqual([
        second.requestId,
        third.requestId,
      ]);
      const firstJob = await queue.getJob(first.requestId);
      expect(gathered.timestamp - (firstJob?.timestamp ?? 0)).toBeGreaterThanOrEqual(40);
      for (const outcome of await Promise.all([firstOutcome, ...later])) {
        expect(completed(outcome).results[0]?.ok).toBe(true);
      }
    } finally {
      await slow.close();
    }
  });

  it('resends each request alone when a worker from before group commit refuses the group', async () => {
    // A rolling upgrade that reached the gateways first: the only worker is the previous
    // release's, whose processor took every job as one request (its code, on this release's
    // service) and refused anything else before any statement.
    const upgrading = newHarness(kit.db);
    const previous = new Worker<unknown, CreateLinksJobResult>(
      CREATE_LINKS_QUEUE,
      async (job) => {
        const parsed = createLinksPayloadSchema.safeParse(job.data);
        if (!parsed.success) {
          throw new UnrecoverableError(
            `invalid create-links payload: ${parsed.error.issues.map((i) => i.path.join('.')).join(', ')}`,
          );
        }
        return writeOne(kit.writer(), parsed.data);
      },
      { connection: redisOptionsFromUrl(testEnvironment().redisUrl), prefix: upgrading.prefix },
    );
    try {
      const app = await createTenant(kit.db);
      const payloads = [1, 2, 3].map((n) => creation(app, [linkDraft({ title: `up${n}` })]));
      const outcomes = await Promise.all(payloads.map((payload) => upgrading.submit(payload)));

      expect(outcomes.map((outcome) => createdLinks(completed(outcome).results)[0]?.title)).toEqual(
        ['up1', 'up2', 'up3'],
      );
      const { queue } = await upgrading.rawQueue();
      expect((await queue.getJob(payloads[0].requestId))?.failedReason).toMatch(
        /^invalid create-links payload:/,
      );
      for (const payload of payloads) {
        expect((await queue.getJob(`${payload.requestId}-alone`))?.name).toBe(CREATE_LINKS_JOB);
      }
      expect(await linksOf(kit.db, app.appId)).toHaveLength(3);
    } finally {
      await previous.close();
      await upgrading.close();
    }
  });

  it('sends a lone request at once, in a job of its own', async () => {
    const app = await createTenant(kit.db);
    const payload = creation(app, [linkDraft()]);
    completed(await kit.harness.submit(payload));
    expect((await groupJobOf(payload)).requests).toHaveLength(1);
  });
});
