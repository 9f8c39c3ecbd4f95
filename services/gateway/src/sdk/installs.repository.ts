import type { Kysely } from 'kysely';
import type { Database, Environment, InstallPlatform, MatchMethod } from '@linkservice/db';
import { constantStatement, executeStatement } from '@linkservice/db';
import { activeTraceparent } from '@linkservice/telemetry';
import { outboxCtes } from '@linkservice/webhooks';
import { linkRedirectsSql } from './link-redirects.sql';

/**
 * A candidate the statement may match, as the service checked it against Redis: a token's
 * candidate names the link its record names (`tokenLinkId`) and its click time; the opened URL
 * names its alias (and, with a token, that token's link too).
 */
export interface MatchCandidate {
  method: MatchMethod;
  tokenHash: string | null;
  tokenLinkId: string | null;
  clickedAt: Date | null;
  alias: string | null;
}

export interface NewInstall {
  id: string;
  appId: string;
  environment: Environment;
  platform: InstallPlatform;
  secretHash: Buffer;
}

/** The link an install matched, as the 201 shows it. */
export interface MatchedLink {
  method: MatchMethod;
  linkId: string;
  alias: string;
  deepLinkData: Record<string, unknown> | null;
  clickedAt: Date | null;
  /** The token used up, when the match took one. */
  tokenHash: string | null;
}

interface RecordRow {
  recorded: boolean;
  method: MatchMethod | null;
  linkId: string | null;
  alias: string | null;
  deepLinkData: Record<string, unknown> | null;
  clickedAt: Date | null;
  tokenHash: string | null;
}

/**
 * Records an install and what it matched, in one statement (one transaction):
 * - `candidates`: the report's evidence in the order it is tried ($6..$10, one array per column).
 *   A token's candidate matches when its record's link is a link of the caller's app and
 *   environment ($2, $3) and no install used the token up yet; the opened URL's when its alias
 *   names such a link and, with a token, that token's link. Either way the link must resolve
 *   as in resolve (active or archived, not expired): an expired link's data is never handed out,
 *   and its token is not used up. The first candidate that matches is `chosen`.
 * - `claim`: a chosen token is used up by inserting its hash into install_clicks, unique: of two
 *   reports racing with one token, the second waits for the first to commit and inserts nothing.
 * - `install`: the install is inserted unless its chosen token was lost that way; then nothing
 *   is written (`recorded` false) and the caller runs the statement again, which now sees the
 *   token used up and tries the next candidate.
 * - the outbox: a matched install's install.matched event ($11: the request's trace context),
 *   rendered on delivery in the report's shape without the secret (see eventPayload).
 */
const RECORD_INSTALL = constantStatement<RecordRow>(
  `WITH candidates AS (
     SELECT * FROM unnest($6::text[], $7::text[], $8::text[], $9::timestamptz[], $10::text[])
       WITH ORDINALITY AS c (method, token_hash, token_link_id, clicked_at, alias, ord)
   ),
   matches AS (
     SELECT c.ord, c.method, c.token_hash, c.clicked_at, l.id AS link_id, l.alias,
            l.deep_link_data, l.archived_at, l.expires_at
       FROM candidates c JOIN links l ON l.id = c.token_link_id
      WHERE c.alias IS NULL AND l.app_id = $2 AND l.environment = $3
     UNION ALL
     SELECT c.ord, c.method, c.token_hash, c.clicked_at, l.id, l.alias,
            l.deep_link_data, l.archived_at, l.expires_at
       FROM candidates c JOIN links l
         ON l.app_id = $2 AND l.environment = $3 AND l.alias = c.alias
      WHERE c.alias IS NOT NULL AND (c.token_hash IS NULL OR l.id = c.token_link_id)
   ),
   chosen AS (
     SELECT * FROM matches m
      WHERE ${linkRedirectsSql('m')}
        AND (m.token_hash IS NULL
             OR NOT EXISTS (SELECT 1 FROM install_clicks used WHERE used.token_hash = m.token_hash))
      ORDER BY m.ord
      LIMIT 1
   ),
   claim AS (
     INSERT INTO install_clicks (install_id, token_hash, link_id, clicked_at)
     SELECT $1, token_hash, link_id, clicked_at FROM chosen WHERE token_hash IS NOT NULL
     ON CONFLICT (token_hash) DO NOTHING
     RETURNING token_hash
   ),
   install AS (
     INSERT INTO installs (id, app_id, environment, platform, secret_hash, match_method, link_id)
     SELECT $1, $2, $3, $4, $5, chosen.method, chosen.link_id
       FROM (VALUES (1)) AS one (n) LEFT JOIN chosen ON true
      WHERE chosen.token_hash IS NULL OR EXISTS (SELECT 1 FROM claim)
     RETURNING id
   ),
   matched AS (SELECT install.id, chosen.* FROM install JOIN chosen ON true),
   ${outboxCtes({
     from: 'matched',
     type: 'install.matched',
     appId: '$2::text',
     environment: '$3::text',
     subject: 'matched.id',
     snapshot: `jsonb_build_object('installId', matched.id, 'platform', $4::text,
       'method', matched.method, 'clickedAt', matched.clicked_at, 'linkId', matched.link_id,
       'alias', matched.alias, 'deepLinkData', matched.deep_link_data)`,
     traceparent: '$11::text',
   })}
   SELECT install.id IS NOT NULL AS recorded, chosen.method, chosen.link_id AS "linkId",
          chosen.alias, chosen.deep_link_data AS "deepLinkData", chosen.clicked_at AS "clickedAt",
          chosen.token_hash AS "tokenHash"
     FROM (VALUES (1)) AS one (n) LEFT JOIN install ON true LEFT JOIN chosen ON true`,
);

interface ErasableRow {
  tokenHash: string | null;
  clickedAt: Date | null;
}

/**
 * The install an erasure names, when the id, secret hash, app and environment all agree: one
 * row, with the token it used up (nulls for none).
 */
const FIND_ERASABLE = constantStatement<ErasableRow>(
  `SELECT used.token_hash AS "tokenHash", used.clicked_at AS "clickedAt"
     FROM installs LEFT JOIN install_clicks used ON used.install_id = installs.id
    WHERE installs.id = $1 AND installs.app_id = $2 AND installs.environment = $3
      AND installs.secret_hash = $4`,
);

interface EraseRow {
  installs: number;
  clicks: number;
  erasedAt: Date;
}

/**
 * Erases one install of the caller's app and environment whose secret hash matches, with the
 * click it used up, in one statement (one transaction). The cascade from installs would remove
 * the click too, but uncounted: it is deleted here so `records` counts it. The same statement
 * writes the install.erased event ($5: the request's trace context); the worker deletes install
 * events as soon as they are delivered.
 */
const ERASE_INSTALL = constantStatement<EraseRow>(
  `WITH target AS (
     SELECT id FROM installs
      WHERE id = $1 AND app_id = $2 AND environment = $3 AND secret_hash = $4
      FOR UPDATE
   ),
   clicks AS (
     DELETE FROM install_clicks WHERE install_id IN (SELECT id FROM target) RETURNING token_hash
   ),
   gone AS (
     DELETE FROM installs WHERE id IN (SELECT id FROM target) RETURNING id
   ),
   erased AS (
     SELECT gone.id, now() AS erased_at,
            (SELECT count(*) FROM gone) + (SELECT count(*) FROM clicks) AS records
       FROM gone
   ),
   ${outboxCtes({
     from: 'erased',
     type: 'install.erased',
     appId: '$2::text',
     environment: '$3::text',
     subject: 'erased.id',
     snapshot: `jsonb_build_object('installId', erased.id, 'erasedAt', erased.erased_at,
       'records', erased.records)`,
     traceparent: '$5::text',
   })}
   SELECT (SELECT count(*) FROM gone)::int AS installs,
          (SELECT count(*) FROM clicks)::int AS clicks,
          now() AS "erasedAt"`,
);

/** Which install an erasure names: all four must agree. */
export interface ErasureTarget {
  installId: string;
  appId: string;
  environment: Environment;
  secretHash: Buffer;
}

/** The token an erasable install used up, if any. */
export interface UsedClick {
  tokenHash: string;
  clickedAt: Date;
}

/** What an erasure deleted. */
export interface ErasedInstall {
  /** Rows deleted: the install and the click it used up. */
  records: number;
  /** The database clock of the deletion. */
  erasedAt: Date;
}

function erasureParameters(target: ErasureTarget): unknown[] {
  return [target.installId, target.appId, target.environment, target.secretHash];
}

export class InstallsRepository {
  constructor(private readonly db: Kysely<Database>) {}

  /**
   * One attempt at recording an install: the match (or null for none) when it was recorded;
   * `lost` when its chosen token was used up by a concurrent report, and nothing was written.
   */
  async record(
    install: NewInstall,
    candidates: readonly MatchCandidate[],
  ): Promise<{ recorded: true; match: MatchedLink | null } | { recorded: false }> {
    const column = <K extends keyof MatchCandidate>(key: K) => candidates.map((c) => c[key]);
    const row = (
      await executeStatement(this.db, RECORD_INSTALL, [
        install.id,
        install.appId,
        install.environment,
        install.platform,
        install.secretHash,
        column('method'),
        column('tokenHash'),
        column('tokenLinkId'),
        column('clickedAt'),
        column('alias'),
        activeTraceparent() ?? '',
      ])
    ).at(0);
    if (!row?.recorded) return { recorded: false };
    if (row.method === null || row.linkId === null || row.alias === null) {
      return { recorded: true, match: null };
    }
    return {
      recorded: true,
      match: {
        method: row.method,
        linkId: row.linkId,
        alias: row.alias,
        deepLinkData: row.deepLinkData,
        clickedAt: row.clickedAt,
        tokenHash: row.tokenHash,
      },
    };
  }

  /**
   * Whether `target` names an install, and the click it used up (null for none); undefined
   * when it names none.
   */
  async findErasable(target: ErasureTarget): Promise<{ usedClick: UsedClick | null } | undefined> {
    const row = (await executeStatement(this.db, FIND_ERASABLE, erasureParameters(target))).at(0);
    if (!row) return undefined;
    const { tokenHash, clickedAt } = row;
    return {
      usedClick: tokenHash === null || clickedAt === null ? null : { tokenHash, clickedAt },
    };
  }

  /** Erases the install when every condition holds; undefined when nothing was deleted. */
  async erase(target: ErasureTarget): Promise<ErasedInstall | undefined> {
    const parameters = [...erasureParameters(target), activeTraceparent() ?? ''];
    const row = (await executeStatement(this.db, ERASE_INSTALL, parameters)).at(0);
    if (!row || row.installs === 0) return undefined;
    return { records: row.installs + row.clicks, erasedAt: row.erasedAt };
  }
}
