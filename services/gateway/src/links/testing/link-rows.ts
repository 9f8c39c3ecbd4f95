import type { Kysely } from 'kysely';
import type { Database, Environment, LinkRow, NewLink } from '@linkservice/db';
import { newId } from '@linkservice/db';

export type LinkSeed = Partial<Omit<NewLink, 'deep_link_data'>> & {
  deep_link_data?: Record<string, unknown> | null;
};

let aliasCounter = 0;

/**
 * Inserts links straight into Postgres for read/list tests (creation through the API is tested
 * with the creation endpoints). Fields not given get plain defaults and a unique alias.
 */
export async function insertLinks(
  db: Kysely<Database>,
  owner: { appId: string; environment: Environment },
  seeds: readonly LinkSeed[],
): Promise<LinkRow[]> {
  if (seeds.length === 0) return [];
  const values = seeds.map(({ deep_link_data, ...seed }) => ({
    id: newId('lnk'),
    app_id: owner.appId,
    environment: owner.environment,
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
  owner: { appId: string; environment: Environment },
  seed: LinkSeed = {},
): Promise<LinkRow> {
  const row = (await insertLinks(db, owner, [seed])).at(0);
  if (!row) throw new Error('insertLinks returned no row');
  return row;
}
