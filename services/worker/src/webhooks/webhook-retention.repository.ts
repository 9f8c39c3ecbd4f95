import type { Database } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/**
 * The webhook tables' retention deletes, each a bounded slice (oldest first) that returns how
 * many rows it deleted. Attempts go with their delivery, deliveries with their event (ON DELETE
 * CASCADE).
 */
export class WebhookRetentionRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /** Delivered and failed deliveries finished more than `days` ago (the finished index). */
  async deleteFinishedDeliveries(days: number, limit: number): Promise<number> {
    const result = await sql`
      DELETE FROM webhook_deliveries
       WHERE id IN (
         SELECT id FROM webhook_deliveries
          WHERE status <> 'pending'
            AND finished_at < now() - make_interval(days => ${days})
          ORDER BY finished_at
          LIMIT ${limit})`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }

  /**
   * Pending deliveries of events older than `days`: their endpoint was disabled (or failing
   * without end) for the whole retention, and an event that old is not sent any more.
   */
  async deleteAbandonedDeliveries(days: number, limit: number): Promise<number> {
    const result = await sql`
      DELETE FROM webhook_deliveries
       WHERE id IN (
         SELECT delivery.id
           FROM webhook_events event
           JOIN webhook_deliveries delivery ON delivery.event_id = event.id
          WHERE event.occurred_at < now() - make_interval(days => ${days})
            AND delivery.status = 'pending'
          ORDER BY event.occurred_at
          LIMIT ${limit})`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }

  /**
   * Events older than `days` left without deliveries (the two deletes above, or their endpoint
   * deleted). Only old events are looked at, so the scan stays within what retention removes.
   */
  async deleteOrphanEvents(days: number, limit: number): Promise<number> {
    const result = await sql`
      DELETE FROM webhook_events
       WHERE id IN (
         SELECT event.id FROM webhook_events event
          WHERE event.occurred_at < now() - make_interval(days => ${days})
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries delivery
                             WHERE delivery.event_id = event.id)
          ORDER BY event.occurred_at
          LIMIT ${limit})`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }

  /**
   * install.* events none of whose deliveries is still pending (all delivered or failed, or
   * none left), whatever their age: their snapshot is an installation's personal data, kept only
   * while it may still be sent. Their deliveries and attempts go with them.
   */
  async deleteSentInstallEvents(limit: number): Promise<number> {
    const result = await sql`
      DELETE FROM webhook_events
       WHERE id IN (
         SELECT event.id FROM webhook_events event
          WHERE event.type LIKE 'install.%'
            AND NOT EXISTS (SELECT 1 FROM webhook_deliveries delivery
                             WHERE delivery.event_id = event.id
                               AND delivery.status = 'pending')
          ORDER BY event.occurred_at
          LIMIT ${limit})`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }
}
