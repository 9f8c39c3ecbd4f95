import type { Kysely } from 'kysely';
import type { LinkDraft } from '@linkservice/contracts';
import { LINK_DRAFT_DEFAULTS } from '@linkservice/contracts';
import type { Database, Environment, LinkRow, NewLink } from '@linkservice/db';
import { newId } from '@linkservice/db';

/** A valid draft, as the gateway hands it to the worker, with only `overrides` set. */
export function linkDraft(overrides: Partial<LinkDraft> = {}): LinkDraft {
  return { ...LINK_DRAFT_DEFAULTS, webFallbackUrl: 'https://example.com/fallback', ...overrides };
}

export type LinkSeed = Partial<Omit<NewLink, 'deep_link_data'>> & {
  deep_link_data?: Record<string, unknown> | null;
};

/** Whose links: a Tenant will do (its live links unless `environment` says otherwise). */
export interface LinkOwner {
  appId: string;
  environment?: Environment;
}

let aliasCounter = 0;

/**
 * Inserts links straight into Postgres, as the worker would store them, for tests of what reads
 * them (lists, the link host, the cache); creation itself is tested through the creation path.
 * Fields not given get plain defaults and a unique alias.
 */
export async function insertLinks(
  db: Kysely<Database>,
  owner: LinkOwner,
  seeds: readonly LinkSeed[],
): Promise<LinkRow[]> {
  if (seeds.length === 0) return [];
  const values = seeds.map(({ deep_link_data, ...seed }) => ({
    id: newId('lnk'),
    app_id: owner.appId,
    environment: owner.environment ?? 'live',
    alias: `seed${(++aliasCounter).toString(36)}x${Date.now().toString(36)}`,
    web_fallback_url: 'https://example.com/fallback',
    ...seed,
    deep_link_data:
      deep_link_data === undefined || deep_link_data === null
        ? null
        : JSON.stringify(deep_link_data),
  }));
  const rows = await db.insertInto('links').values(values).returningAll().execute();
  // RETURNING keeps VALUES order in practice, but nothing promises it: match by id.
  const byId = new Map(rows.map((row) => [row.id, row]));
  return values.map((value) => byId.get(value.id)!);
}

export async function insertLink(
  db: Kysely<Database>,
  owner: LinkOwner,
  seed: LinkSeed = {},
): Promise<LinkRow> {
  const row = (await insertLinks(db, owner, [seed])).at(0);
  if (!row) throw new Error('insertLinks returned no row');
  return row;
}

/** An app's links as stored, oldest id first. */
export function linksOf(db: Kysely<Database>, appId: string): Promise<LinkRow[]> {
  return db.selectFrom('links').selectAll().where('app_id', '=', appId).orderBy('id').execute();
}

/** The aliases of an app's links, sorted. */
export async function aliasesOf(db: Kysely<Database>, appId: string): Promise<string[]> {
  const rows = await db.selectFrom('links').select('alias').where('app_id', '=', appId).execute();
  return rows.map((row) => row.alias).sort();
}

/** How many creation requests of an app are stored (each handed-over creation leaves one). */
export async function creationRequestCount(db: Kysely<Database>, appId: string): Promise<number> {
  const rows = await db
    .selectFrom('creation_requests')
    .select('id')
    .where('app_id', '=', appId)
    .execute();
  return rows.length;
}
