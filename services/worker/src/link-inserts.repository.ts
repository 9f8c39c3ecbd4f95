import type { StoredLink } from '@linkservice/contracts';
import { STORED_LINK_COLUMNS } from '@linkservice/contracts';
import type { CreationTransaction } from '@linkservice/creation';
import type { NewLink } from '@linkservice/db';
import { outboxCtes } from '@linkservice/webhooks';
import { sql } from 'kysely';
import type { AliasRef } from './creation-plan';
import { aliasKey } from './creation-plan';

/**
 * The link.created events of the inserted links (one per row of `inserted`), with the trace
 * context of the request each came from (`traces`). Also the lone statement's
 * (lone-creation.repository.ts).
 */
export const LINK_CREATED_EVENTS = outboxCtes({
  from: 'inserted LEFT JOIN traces ON traces.link_id = inserted.id',
  type: 'link.created',
  appId: 'inserted.app_id',
  environment: 'inserted.environment',
  subject: 'inserted.id',
  snapshot: 'to_jsonb(inserted)',
  traceparent: 'traces.traceparent',
});

/**
 * The worker's statements about links: the two a creation needs. They run inside a creation
 * transaction (its claim holds the app's lock), on the transaction's connection; the protocol's
 * own statements live in @linkservice/creation. (The gateway's LinksRepository reads links.)
 */
export class LinkInserts {
  /**
   * Which of the wanted aliases exist, archived links included, as aliasKey()s: one statement for
   * a whole group, whatever its apps and environments (the unique index on app, environment and
   * alias answers each).
   */
  async takenAliases(tx: CreationTransaction, wanted: readonly AliasRef[]): Promise<Set<string>> {
    if (wanted.length === 0) return new Set();
    const { rows } = await sql<AliasRef>`
      SELECT links.app_id AS "appId", links.environment, links.alias
      FROM unnest(
        ${wanted.map((ref) => ref.appId)}::text[],
        ${wanted.map((ref) => ref.environment)}::text[],
        ${wanted.map((ref) => ref.alias)}::text[]
      ) AS wanted(app_id, environment, alias)
      JOIN links USING (app_id, environment, alias)`.execute(tx.db);
    return new Set(rows.map(aliasKey));
  }

  /**
   * One multi-row insert that returns the rows as stored (column defaults, jsonb's key order).
   * A row whose alias is taken is skipped, not an error: the caller sees which by the rows that
   * come back and retries only generated aliases. The app's link counts follow by the trigger on
   * links (see the app-link-counts migration). The same statement writes each stored link's
   * link.created event to the outbox when its app subscribes (outboxCtes): the event commits
   * with the link or not at all. `traceparents[i]` is row i's request trace context ('' none).
   */
  async insertLinks(
    tx: CreationTransaction,
    links: NewLink[],
    traceparents: readonly string[],
  ): Promise<StoredLink[]> {
    if (links.length === 0) throw new Error('insertLinks needs at least one link');
    const insert = tx.db
      .insertInto('links')
      .values(links)
      .onConflict((oc) => oc.columns(['app_id', 'environment', 'alias']).doNothing())
      .returning(STORED_LINK_COLUMNS);
    const { rows } = await sql<StoredLink>`
      WITH inserted AS (${insert}),
      traces AS (
        SELECT * FROM unnest(${links.map((link) => link.id)}::text[], ${traceparents}::text[])
          AS trace(link_id, traceparent)
      ),
      ${sql.raw(LINK_CREATED_EVENTS)}
      SELECT * FROM inserted`.execute(tx.db);
    return rows;
  }
}
