import { Worker } from 'bullmq';
import type { Creation, LinkRow } from './bare';
import { createPool, INSERTED_COLUMNS, LINK_COLUMNS, redisOptions } from './bare';

/**
 * The worker of `queued-insert-server.ts`: per job (a group of creations) one INSERT ... SELECT
 * of every row of the group, RETURNING the links (in no particular order: the server finds each
 * by its id), which become the job's return value.
 */

const pool = createPool();

const INSERT_GROUP = `INSERT INTO links (${INSERTED_COLUMNS})
  SELECT r.id, r.app_id, r.environment, r.alias, r.web_fallback_url, r.title, r.campaign,
    ARRAY(SELECT jsonb_array_elements_text(r.tags)), r.deep_link_data
  FROM jsonb_to_recordset($1::jsonb) AS r(id text, app_id text, environment text, alias text,
    web_fallback_url text, title text, campaign text, tags jsonb, deep_link_data jsonb)
  RETURNING ${LINK_COLUMNS}`;

const worker = new Worker<{ rows: Creation['values'][] }, LinkRow[]>(
  'insert',
  async (job) => {
    const rows = job.data.rows.map(
      ([id, appId, environment, alias, webFallbackUrl, title, campaign, tags, deepLinkData]) => ({
        id,
        app_id: appId,
        environment,
        alias,
        web_fallback_url: webFallbackUrl,
        title,
        campaign,
        tags,
        deep_link_data: JSON.parse(deepLinkData) as unknown,
      }),
    );
    const inserted = await pool.query<LinkRow>(INSERT_GROUP, [JSON.stringify(rows)]);
    return inserted.rows;
  },
  {
    connection: redisOptions(),
    prefix: process.env.REDIS_PREFIX,
    concurrency: 8,
    removeOnComplete: { count: 1_000 },
  },
);
worker.on('error', () => undefined);

let stopping: Promise<void> | undefined;
const stop = () => {
  stopping ??= worker
    .close()
    .finally(() => pool.end())
    // The channel to the server would keep this process alive.
    .finally(() => {
      if (process.connected) process.disconnect();
    });
};
process.on('SIGTERM', stop);
// Forked by the server: gone with it, however it ended.
process.on('disconnect', stop);
