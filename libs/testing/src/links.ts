import type { Kysely } from 'kysely';
import type { LinkDraft } from '@linkservice/contracts';
import { LINK_COLUMNS, LINK_DRAFT_DEFAULTS } from '@linkservice/contracts';
import type { CountedLinkRow, Database, Environment, LinkRow, NewLink } from '@linkservice/db';
import { newId } from '@linkservice/db';

/** A valid draft, as the gateway hands it to the worker, with only `overrides` set. */
export function linkDraft(overrides: Partial<LinkDraft> = {}): LinkDraft {
  return { ...LINK_DRAFT_DEFAULTS, webFallbackUrl: 'https://example.com/fallback', ...overrides };
}

export type LinkSeed = Partial<Omit<NewLink, 'deep_link_data'>> & {
  deep_link_data?: Record<string, unknown> | null;
  /** Clicks already flushed for the link: its link_clicks row (none for 0). */
  click_count?: number;
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
 * Fields not given get plain defaults and a unique alias; a `click_count` goes into link_clicks,
 * as the link host's flusher stores it.
 */
export async function insertLinks(
  db: Kysely<Database>,
  owner: LinkOwner,
  seeds: readonly LinkSeed[],
): Promise<CountedLinkRow[]> {
  if (seeds.length === 0) return [];
  const values = seeds.map(({ deep_link_data, click_count: _clicks, ...seed }) => ({
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
  const rows = await db.insertInto('links').values(values).returning(LINK_COLUMNS).execute();
  const clicks = values.flatMap((value, index) => {
    const count = seeds[index]?.click_count ?? 0;
    return count > 0
      ? [
          {
            link_id: value.id,
            app_id: value.app_id,
            environment: value.environment,
            click_count: count,
          },
        ]
      : [];
  });
  if (clicks.length > 0) await db.insertInto('link_clicks').values(clicks).execute();
  // RETURNING keeps VALUES order in practice, but nothing promises it: match by id.
  const byId = new Map(rows.map((row) => [row.id, row]));
  return values.map((value, index) => ({
    ...byId.get(value.id)!,
    click_count: seeds[index]?.click_count ?? 0,
  }));
}

export async function insertLink(
  db: Kysely<Database>,
  owner: LinkOwner,
  seed: LinkSeed = {},
): Promise<CountedLinkRow> {
  const row = (await insertLinks(db, owner, [seed])).at(0);
  if (!row) throw new Error('insertLinks returned no row');
  return row;
}

/** An app's links as stored, oldest id first (their click counts are in link_clicks). */
export function linksOf(db: Kysely<Database>, appId: string): Promise<LinkRow[]> {
  return db
    .selectFrom('links')
    .select(LINK_COLUMNS)
    .where('app_id', '=', appId)
    .orderBy('id')
    .execute();
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
