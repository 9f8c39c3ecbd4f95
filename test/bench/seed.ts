import type { Database } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { hashSecretKey, randomBase62 } from '@linkservice/keys';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import { createTenant } from '../support/tenants';
import type { Tenant } from '../support/tenants';

/** Every seeded link has a distinct campaign among this many, so one campaign holds N/1000 links. */
export const CAMPAIGNS = 1_000;
const CHANNELS = ['email', 'sms', 'social', 'ads'] as const;

/**
 * Seeded ids and aliases are functions of the row number, so the bench can address any seeded
 * link without reading them back. The id keeps the `lnk_` prefix and a ULID's 26 characters.
 */
export function seededLinkId(n: number, tag: SeedTag = 'BENCH'): string {
  return `lnk_${tag}${String(n).padStart(21, '0')}`;
}

/** Five characters after `lnk_` that keep each seeded app's ids apart (ids are global). */
export type SeedTag = 'BENCH' | 'SMALL' | 'ANLYT';

export function seededAlias(n: number): string {
  return `b${n}`;
}

export interface SeededApp {
  tenant: Tenant;
  links: number;
}

/**
 * One app holding `links` live links, inserted with one set-based `INSERT ... SELECT FROM
 * generate_series` (never through the API), then VACUUM ANALYZE so the planner sees the table
 * as production would after autovacuum. Row n is created n seconds before now (so newest-first
 * is row 1 first), in campaign `campaign-<n mod 1000>`, channel one of four, with one of 100 tags
 * and (n * 7919) mod 10000 clicks (in link_clicks).
 * The app's link counts follow by the trigger on links, as for any insert. Another app seeded
 * the same way (the small one) takes its own `tag` and name.
 */
export async function seedLargeApp(
  db: Kysely<Database>,
  links: number,
  { name = 'Bench: large app', tag = 'BENCH' }: { name?: string; tag?: SeedTag } = {},
): Promise<SeededApp> {
  const tenant = await createTenant(db, { name });
  await sql`
    INSERT INTO links (id, app_id, environment, alias, web_fallback_url, ios_fallback_url,
                       deep_link_data, title, campaign, channel, feature, tags,
                       created_at, updated_at)
    SELECT ${`lnk_${tag}`} || lpad(g::text, 21, '0'),
           ${tenant.appId}, 'live', 'b' || g,
           'https://example.com/products/' || g,
           CASE WHEN g % 3 = 0 THEN 'https://apps.apple.com/app/id' || g END,
           jsonb_build_object('productId', g, 'screen', 'product'),
           'Product ' || g,
           'campaign-' || (g % ${CAMPAIGNS}),
           (${sql.lit(`{${CHANNELS.join(',')}}`)}::text[])[1 + g % ${CHANNELS.length}],
           'feature-' || (g % 50),
           ARRAY['tag-' || (g % 100)],
           now() - make_interval(secs => g),
           now() - make_interval(secs => g)
    FROM generate_series(1, ${links}::int) AS g
  `.execute(db);
  // Click counts as the link host stores them (link_clicks, a row only for a clicked link):
  // (n * 7919) mod 10000, so every count from 1 to 9999 occurs and 1 in 10,000 links has none.
  await sql`
    INSERT INTO link_clicks (link_id, app_id, environment, click_count)
    SELECT ${`lnk_${tag}`} || lpad(g::text, 21, '0'), ${tenant.appId}, 'live',
           (g::bigint * 7919) % 10000
    FROM generate_series(1, ${links}::int) AS g
    WHERE (g::bigint * 7919) % 10000 > 0
  `.execute(db);
  return { tenant, links };
}

/**
 * A live publishable key of the app (`ls_pk_live_<40 base62>`, the app interface's key),
 * inserted as linkctl stores one: its SHA-256 only. Returns the key's text.
 */
export async function seedPublishableKey(db: Kysely<Database>, appId: string): Promise<string> {
  const key = `ls_pk_live_${randomBase62(40)}`;
  await db
    .insertInto('api_keys')
    .values({
      id: newId('key'),
      app_id: appId,
      environment: 'live',
      type: 'publishable',
      key_hash: hashSecretKey(key),
    })
    .execute();
  return key;
}

/** Refreshes visibility maps and planner statistics after the bulk load. */
export async function vacuumAnalyze(db: Kysely<Database>): Promise<void> {
  await sql`VACUUM ANALYZE links`.execute(db);
  await sql`VACUUM ANALYZE link_clicks`.execute(db);
  await sql`VACUUM ANALYZE apps`.execute(db);
  await sql`VACUUM ANALYZE api_keys`.execute(db);
}
