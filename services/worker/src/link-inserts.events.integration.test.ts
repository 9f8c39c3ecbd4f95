import { randomUUID } from 'node:crypto';
import { CreationTransactions } from '@linkservice/creation';
import { newId } from '@linkservice/db';
import { LinkInserts } from './link-inserts.repository';
import { createSubscribedTenant, useCreationHarness } from './testing/creation-harness';

const kit = useCreationHarness();

/** link.created is written by the insert itself: it commits with the links or not at all. */
describe('link.created in the creation transaction', () => {
  const eventsOf = (appId: string) =>
    kit.db
      .selectFrom('webhook_events')
      .select(['subject', 'traceparent'])
      .where('app_id', '=', appId)
      .orderBy('seq')
      .execute();

  async function insertInTransaction(appId: string, outcome: 'commit' | 'rollback') {
    const requestId = `crt_${randomUUID()}`;
    const ids = [newId('lnk'), newId('lnk')];
    const traceparent = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
    await new CreationTransactions(kit.db).run(5_000, async (tx) => {
      await tx.claimAll([{ requestId, appId, deadline: Date.now() + 5_000 }]);
      const rows = await new LinkInserts().insertLinks(
        tx,
        ids.map((id, i) => ({
          id,
          app_id: appId,
          environment: 'live',
          alias: `${outcome}-${i}`,
          web_fallback_url: 'https://example.com',
        })),
        [traceparent, ''],
      );
      expect(rows).toHaveLength(2);
      // Inside the transaction the events exist already...
      const inside = await tx.db
        .selectFrom('webhook_events')
        .select('subject')
        .where('app_id', '=', appId)
        .execute();
      expect(inside.map(({ subject }) => subject).sort()).toEqual([...ids].sort());
      if (outcome === 'commit') await tx.commit();
    });
    return { ids, traceparent };
  }

  it('commits the events with the links, each with its request trace context', async () => {
    const app = await createSubscribedTenant(kit.db);
    const { ids, traceparent } = await insertInTransaction(app.appId, 'commit');
    expect(await eventsOf(app.appId)).toEqual([
      { subject: ids[0], traceparent },
      { subject: ids[1], traceparent: null },
    ]);
  });

  it('leaves no event when the transaction rolls back', async () => {
    const app = await createSubscribedTenant(kit.db);
    await insertInTransaction(app.appId, 'rollback');
    expect(await eventsOf(app.appId)).toEqual([]);
    expect(
      await kit.db.selectFrom('links').select('id').where('app_id', '=', app.appId).execute(),
    ).toEqual([]);
  });
});
