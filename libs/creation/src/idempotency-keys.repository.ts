import type { Database, Environment } from '@linkservice/db';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';

/** How long a key is remembered, from its first request (docs/decisions.md). */
export const IDEMPOTENCY_KEY_TTL_HOURS = 24;

/** Whose key: the app and environment of the authenticating API key, and the caller's value. */
export interface IdempotencyKeyId {
  appId: string;
  environment: Environment;
  key: string;
}

/** An answer as it was sent: status, the headers that matter, and the exact JSON text. */
export interface StoredAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The row that holds a key: the owning attempt and, once it answered, its answer. */
export interface KeyRecord {
  requestHash: string;
  creationRequestId: string;
  /** The owning attempt's deadline passed (database clock) without an answer stored. */
  ownerGone: boolean;
  answer: StoredAnswer | null;
  /**
   * When the owner claimed the key (database clock): the clock its gateway checked the request
   * with, so an answer rebuilt from the worker's results judges every entry as the owner did.
   */
  claimedAt: Date;
}

/** What the claim found: the key is now this attempt's, or another request holds it. */
export type KeyClaim = { kind: 'claimed'; claimedAt: Date } | ({ kind: 'taken' } & KeyRecord);

interface RecordRow {
  request_hash: string | null;
  creation_request_id: string | null;
  owner_gone: boolean;
  answer_status: number | null;
  answer_headers: Record<string, string> | null;
  answer_body: string | null;
  created_at: Date;
}

interface ClaimRow extends RecordRow {
  claimed: boolean;
}

/**
 * The idempotency_keys statements: the gateway's claim, read, answer and release, and the
 * worker's retention. Every time is the database's (now()), so gateways with skewed clocks agree
 * on whose attempt has run out and which keys have expired.
 */
export class IdempotencyKeysRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * One statement: takes the key for this attempt (a new key, or one older than the TTL, which
   * counts as absent), or else reads the row that holds it. Returns undefined when the row that
   * blocked the insert is not one this statement can report: committed after its snapshot (a
   * concurrent first request), or expired in its snapshot while a concurrent request took it
   * over (the update the insert waited for). The caller reads again; the next statement sees the
   * committed row. Reporting the expired row instead would replay another request's answer.
   */
  async claim(
    id: IdempotencyKeyId,
    attempt: { requestHash: string; creationRequestId: string; leaseMs: number },
  ): Promise<KeyClaim | undefined> {
    const { rows } = await sql<ClaimRow>`
      WITH claimed AS (
        INSERT INTO idempotency_keys AS k
          (app_id, environment, key, request_hash, creation_request_id, owner_deadline)
        VALUES (${id.appId}, ${id.environment}, ${id.key}, ${attempt.requestHash},
                ${attempt.creationRequestId},
                now() + make_interval(secs => ${attempt.leaseMs / 1000}))
        ON CONFLICT (app_id, environment, key) DO UPDATE
          SET request_hash = excluded.request_hash,
              creation_request_id = excluded.creation_request_id,
              owner_deadline = excluded.owner_deadline,
              answer_status = NULL, answer_headers = NULL, answer_body = NULL,
              created_at = now()
          WHERE k.created_at <= now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})
        RETURNING k.created_at
      )
      SELECT true AS claimed, NULL AS request_hash, NULL AS creation_request_id,
             false AS owner_gone, NULL::integer AS answer_status, NULL::jsonb AS answer_headers,
             NULL AS answer_body, created_at
      FROM claimed
      UNION ALL
      SELECT false, request_hash, creation_request_id, owner_deadline < now(), answer_status,
             answer_headers, answer_body, created_at
      FROM idempotency_keys
      WHERE app_id = ${id.appId} AND environment = ${id.environment} AND key = ${id.key}
        AND created_at > now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})
        AND NOT EXISTS (SELECT 1 FROM claimed)`.execute(this.db);
    const row = rows.at(0);
    if (!row) return undefined;
    if (row.claimed) return { kind: 'claimed', claimedAt: row.created_at };
    return { kind: 'taken', ...recordOf(row) };
  }

  /**
   * A plain read of the key's row, for a request waiting on the owner: takes no lock, so polling
   * waiters never queue behind each other or the owner. Undefined when the key is free (no row,
   * or one older than the TTL): the caller claims it then.
   */
  async read(id: IdempotencyKeyId): Promise<KeyRecord | undefined> {
    const { rows } = await sql<RecordRow>`
      SELECT request_hash, creation_request_id, owner_deadline < now() AS owner_gone,
             answer_status, answer_headers, answer_body, created_at
      FROM idempotency_keys
      WHERE app_id = ${id.appId} AND environment = ${id.environment} AND key = ${id.key}
        AND created_at > now() - make_interval(hours => ${IDEMPOTENCY_KEY_TTL_HOURS})`.execute(
      this.db,
    );
    const row = rows.at(0);
    return row ? recordOf(row) : undefined;
  }

  /**
   * Stores the answer of the attempt that owns the key. False when it no longer does (another
   * request settled it after its deadline and took the key over, or stored that answer first).
   */
  async storeAnswer(
    id: IdempotencyKeyId,
    creationRequestId: string,
    answer: StoredAnswer,
  ): Promise<boolean> {
    const result = await sql`
      UPDATE idempotency_keys
      SET answer_status = ${answer.status}, answer_headers = ${JSON.stringify(answer.headers)}::jsonb,
          answer_body = ${answer.body}
      WHERE app_id = ${id.appId} AND environment = ${id.environment} AND key = ${id.key}
        AND creation_request_id = ${creationRequestId} AND answer_status IS NULL`.execute(this.db);
    return Number(result.numAffectedRows ?? 0) === 1;
  }

  /** Frees the key of an attempt that created nothing (503, 429), so a retry can run again. */
  async release(id: IdempotencyKeyId, creationRequestId: string): Promise<void> {
    await sql`
      DELETE FROM idempotency_keys
      WHERE app_id = ${id.appId} AND environment = ${id.environment} AND key = ${id.key}
        AND creation_request_id = ${creationRequestId} AND answer_status IS NULL`.execute(this.db);
  }

  /** Deletes rows older than `olderThanHours`, a bounded slice per call; returns how many. */
  async deleteOlderThan(olderThanHours: number, limit: number): Promise<number> {
    const result = await sql`
      DELETE FROM idempotency_keys
      WHERE (app_id, environment, key) IN (
        SELECT app_id, environment, key FROM idempotency_keys
        WHERE created_at < now() - make_interval(hours => ${olderThanHours})
        LIMIT ${limit}
      )`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }
}

function recordOf(row: RecordRow): KeyRecord {
  if (row.request_hash === null || row.creation_request_id === null) {
    throw new Error('an idempotency key row without its request');
  }
  return {
    requestHash: row.request_hash,
    creationRequestId: row.creation_request_id,
    ownerGone: row.owner_gone,
    answer:
      row.answer_status === null || row.answer_body === null
        ? null
        : { status: row.answer_status, headers: row.answer_headers ?? {}, body: row.answer_body },
    claimedAt: row.created_at,
  };
}
