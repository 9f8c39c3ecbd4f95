import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LinkRow } from './bare';
import { authenticate, createPool, NOT_FOUND, send, listen, toLink, UNAUTHORISED } from './bare';

/**
 * Baseline for the read paths: the least a server can do to answer them with the same
 * guarantees, on bare node:http and pg with the gateway's pool size (bare.ts):
 * - GET /api/v1/links/{id}: the key check, then the link matched by id, app and environment.
 * - GET /api/v1/links (no query): the key check, then the default page (newest first, 25) and
 *   the total, with the very statement links.repository.ts sends for an unfiltered list (one
 *   statement: the matches, the stored total, the page, its rows), answered as the API does.
 */

const pool = createPool();

// The count is joined from link_clicks as the gateway reads it (links.click_count is the
// previous release's, see the link-clicks migration).
const LINK_READ = `SELECT links.*, coalesce(link_clicks.click_count, 0) AS click_count
  FROM links LEFT JOIN link_clicks ON link_clicks.link_id = links.id
  WHERE links.id = $1 AND links.app_id = $2 AND links.environment = $3`;
const LINK_PATH = /^\/api\/v1\/links\/([A-Za-z0-9_]+)$/;

const PER_PAGE = 25;
/** links.repository.ts's FEW_MATCHES: up to this many matches are collected and sorted. */
const FEW_MATCHES = 10_000;
const PAGE_KEYS = 'links.id, links.created_at, links.alias';
/** The columns links.repository.ts reads by name, the count joined from link_clicks. */
const LIST_COLUMNS =
  'links.id, links.app_id, links.environment, links.alias, links.archived_at, links.created_at, ' +
  'links.updated_at, links.search_text, links.web_fallback_url, links.ios_fallback_url, ' +
  'links.deep_link_data, links.title, links.campaign, links.channel, links.feature, links.tags, ' +
  'links.expires_at, coalesce(link_clicks.click_count, 0) AS click_count';

/**
 * What links.repository.ts's list() sends for `GET /links` without a query: keep it in step
 * with that statement. $1 app, $2 environment; the stored total's column by environment.
 */
function listStatement(countColumn: string): string {
  const total = '(SELECT total FROM counted)';
  return `
      WITH matched AS MATERIALIZED (
        SELECT ${PAGE_KEYS} FROM links WHERE links.app_id = $1 AND links.environment = $2
      ),
      counted AS (SELECT coalesce((SELECT "${countColumn}" FROM apps WHERE id = $1), 0) AS total),
      page AS (
        (SELECT * FROM matched WHERE ${total} <= $3 AND ${total} > $4
         ORDER BY matched.created_at DESC, matched.id DESC LIMIT $5 OFFSET $4)
        UNION ALL
        (SELECT ${PAGE_KEYS} FROM links
         WHERE links.app_id = $1 AND links.environment = $2 AND ${total} > $3 AND ${total} > $4
         ORDER BY links.created_at DESC, links.id DESC LIMIT $5 OFFSET $4))
      SELECT ${LIST_COLUMNS}, counted.total, now() AS db_now
      FROM counted
      LEFT JOIN page ON true
      LEFT JOIN links ON links.id = page.id
        AND links.app_id = $1 AND links.environment = $2
      LEFT JOIN link_clicks ON link_clicks.link_id = links.id
      ORDER BY page.created_at DESC, page.id DESC
    `;
}
const LIST = { live: listStatement('live_link_count'), test: listStatement('test_link_count') };

type PageRow = { [K in keyof LinkRow]: LinkRow[K] | null } & { total: string; db_now: Date };

async function getLink(req: IncomingMessage, res: ServerResponse, id: string): Promise<void> {
  const auth = await authenticate(pool, req);
  if (!auth) {
    send(res, 401, UNAUTHORISED);
    return;
  }
  const link = await pool.query<LinkRow>(LINK_READ, [id, auth.app_id, auth.environment]);
  const row = link.rows.at(0);
  if (!row) {
    send(res, 404, NOT_FOUND);
    return;
  }
  send(res, 200, { link: toLink(row, auth.subdomain_key) });
}

async function listLinks(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const auth = await authenticate(pool, req);
  if (!auth) {
    send(res, 401, UNAUTHORISED);
    return;
  }
  const statement = auth.environment === 'test' ? LIST.test : LIST.live;
  const result = await pool.query<PageRow>(statement, [
    auth.app_id,
    auth.environment,
    FEW_MATCHES,
    0,
    PER_PAGE,
  ]);
  const first = result.rows.at(0);
  const total = Number(first?.total ?? 0);
  const now = first?.db_now ?? new Date();
  const links = result.rows
    .filter((row) => row.id !== null)
    .map((row) => toLink(row as LinkRow, auth.subdomain_key, now));
  send(res, 200, {
    links,
    pagination: { page: 1, perPage: PER_PAGE, total, pageCount: Math.ceil(total / PER_PAGE) },
  });
}

function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'GET' && req.url === '/api/v1/links') return listLinks(req, res);
  const match = req.method === 'GET' ? LINK_PATH.exec(req.url ?? '') : null;
  if (match?.[1] !== undefined) return getLink(req, res, match[1]);
  send(res, 404, NOT_FOUND);
  return Promise.resolve();
}

listen('baseline read server', pool, handle);
