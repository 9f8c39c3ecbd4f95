import { createDb } from '@linkservice/db';
import type { Database } from '@linkservice/db';
import { ClickBatchesRepository } from '@linkservice/redirect';
import type { Kysely } from 'kysely';
import { sql } from 'kysely';
import type { LoadJob } from './load-protocol';
import type { Scenario, ScenarioInputs } from './scenarios';
import { formatCount } from './scenarios';
import { CAMPAIGNS, seededLinkId } from './seed';

/**
 * What click traffic costs the links a search reads (issue 15): `search-after-clicks` measures
 * the same searches before and after a million clicks are flushed onto links they find, through
 * the link host's own flush statement (ClickBatchesRepository.apply) in batches shaped like its flushes.
 * When clicks wrote links rows (UPDATE links SET click_count, never HOT because an index held
 * click_count), every flush left new row versions and index entries, the trigram search index
 * included, and searches slowed; with counts in link_clicks they must not.
 */

/** Three-digit campaigns, each matching 1/1000 of the links and no substring of another. */
const SEARCHED_CAMPAIGNS = Array.from({ length: 10 }, (_, i) => 100 + i);
/** Links clicked per searched campaign: 1,000 clicked links in all, as in the report. */
const CLICKED_PER_CAMPAIGN = 100;
const TOTAL_CLICKS = 1_000_000;
/** Distinct links in one flush (one flush interval's pending hash), one click each. */
const LINKS_PER_BATCH = 50;
/** Flushers applying at once, as replicas do; their batches overlap. */
const FLUSHERS = 2;

/** The seeded rows of the searched campaigns that get the clicks. */
function clickedRows(largeLinks: number): number[] {
  const rows: number[] = [];
  for (const campaign of SEARCHED_CAMPAIGNS) {
    for (let k = 0; k < CLICKED_PER_CAMPAIGN; k++) {
      const row = campaign + k * CAMPAIGNS;
      if (row <= largeLinks) rows.push(row);
    }
  }
  return rows;
}

/**
 * The links table and its indexes as click traffic could change them (bigints read as numbers,
 * see @linkservice/db's pool).
 */
async function linksTableState(db: Kysely<Database>) {
  const result = await sql<{
    linksBytes: number;
    linksIndexBytes: number;
    searchIndexBytes: number;
    /** Null before the link-clicks migration (a run of an older commit, for comparison). */
    linkClicksBytes: number | null;
    linksUpdates: number;
    linksHotUpdates: number;
    linksDeadRows: number;
  }>`
    SELECT pg_relation_size('links') AS "linksBytes",
           pg_indexes_size('links') AS "linksIndexBytes",
           pg_relation_size('links_search_idx') AS "searchIndexBytes",
           pg_total_relation_size(to_regclass('link_clicks')) AS "linkClicksBytes",
           n_tup_upd AS "linksUpdates", n_tup_hot_upd AS "linksHotUpdates",
           n_dead_tup AS "linksDeadRows"
    FROM pg_stat_user_tables WHERE relname = 'links'`.execute(db);
  const state = result.rows.at(0);
  if (!state) throw new Error('no statistics for links');
  return state;
}

/**
 * Statistics reach pg_stat_user_tables when a backend flushes them (at most once a second when
 * idle): both pool connections are asked to flush now, and this snapshot is dropped.
 */
async function flushStatistics(db: Kysely<Database>): Promise<void> {
  await Promise.all(
    Array.from({ length: FLUSHERS }, () =>
      sql`SELECT pg_stat_force_next_flush(), pg_sleep(0.1)`.execute(db),
    ),
  );
  await new Promise((resolve) => setTimeout(resolve, 500));
  await sql`SELECT pg_stat_clear_snapshot()`.execute(db);
}

/**
 * TOTAL_CLICKS clicks on `linkIds`, in batches of LINKS_PER_BATCH links with one click each
 * (drawn at random), applied by FLUSHERS concurrent callers of the link host's statement.
 */
async function applyClicks(db: Kysely<Database>, linkIds: readonly string[]) {
  const batches = Math.ceil(TOTAL_CLICKS / LINKS_PER_BATCH);
  const run = `bench:${Date.now().toString(36)}`;
  let next = 0;
  let clicks = 0;
  const started = Date.now();
  const clickBatches = new ClickBatchesRepository(db);
  const flusher = async (): Promise<void> => {
    for (let batch = next++; batch < batches; batch = next++) {
      const counts = new Map<string, number>();
      const wanted = Math.min(LINKS_PER_BATCH, TOTAL_CLICKS - batch * LINKS_PER_BATCH);
      while (counts.size < Math.min(wanted, linkIds.length)) {
        const id = linkIds[Math.floor(Math.random() * linkIds.length)];
        counts.set(id, 1);
      }
      await clickBatches.apply([{ id: `${run}:${batch}`, counts }]);
      clicks += counts.size;
    }
  };
  await Promise.all(Array.from({ length: FLUSHERS }, flusher));
  return { batches, clicks, seconds: (Date.now() - started) / 1000 };
}

export function clickScenarios(inputs: ScenarioInputs): Scenario[] {
  const { settings, large, largeLinks } = inputs;
  const auth = { authorization: `Bearer ${large.live.secret}` };
  const timing = {
    durationSeconds: settings.durationSeconds,
    warmupSeconds: settings.warmupSeconds,
  };
  const oneConnection = (origin: string, paths: string[]): LoadJob => ({
    kind: 'http',
    origin,
    ...timing,
    method: 'GET',
    paths,
    headers: auth,
    expectStatus: 200,
    connections: 1,
  });
  const searches = SEARCHED_CAMPAIGNS.map((c) => `/api/v1/links?search=campaign-${c}`);
  const clicked = clickedRows(largeLinks);
  const hits = formatCount(largeLinks / CAMPAIGNS);

  return [
    {
      id: 'sort-clicks',
      title: `GET /links?sort=clicks (${formatCount(largeLinks)} links)`,
      subject: 'gateway',
      goal: { kind: 'p50-max', ms: 50 },
      job: (origin) => oneConnection(origin, ['/api/v1/links?sort=clicks']),
    },
    {
      id: 'search-after-clicks-baseline',
      title: `GET /links?search=campaign-1NN (${hits} hits), before the clicks`,
      subject: 'gateway',
      // A longer warm-up: these campaigns' pages are read here first, and a baseline measured
      // on a colder cache than the line after it would flatter the ratio.
      job: (origin) => ({
        ...oneConnection(origin, searches),
        warmupSeconds: settings.warmupSeconds * 3,
      }),
    },
    {
      id: 'search-after-clicks',
      title: `same, after ${formatCount(TOTAL_CLICKS)} clicks on ${formatCount(clicked.length)} of their links`,
      subject: 'gateway',
      goal: {
        kind: 'latency-vs',
        against: 'search-after-clicks-baseline',
        factor: 1.2,
        plusMs: 0,
      },
      // Before the load: the clicks, flushed as the link host flushes them.
      before: async () => {
        const handle = createDb({ connectionString: inputs.databaseUrl, max: FLUSHERS });
        try {
          await flushStatistics(handle.db);
          const before = await linksTableState(handle.db);
          const applied = await applyClicks(
            handle.db,
            clicked.map((n) => seededLinkId(n)),
          );
          await flushStatistics(handle.db);
          const after = await linksTableState(handle.db);
          return { clickedLinks: clicked.length, ...applied, before, after };
        } finally {
          await handle.close();
        }
      },
      job: (origin) => oneConnection(origin, searches),
    },
  ];
}
