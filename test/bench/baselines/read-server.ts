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
const PAGE_KEYS = 'links.id, links.created_at, links.alias';
/** The columns links.repository.ts reads by name. */
const LINK_COLUMNS = [
  'id',
  'app_id',
  'environment',
  'alias',
  'archived_at',
  'created_at',
  'updated_at',
  'search_text',
  'web_fallback_url',
  'ios_fallback_url',
  'deep_link_data',
  'title',
  'campaign',
  'channel',
  'feature',
  'tags',
  'expires_at',
];

/**
 * What links.repository.ts's list() sends for `GET /links` without a query: keep it in step
 * with that statement. $1 app, $2 environment; the stored total's column by environment. The
 * page walks links_newest_idx; each of its rows is looked up by id with its count.
 */
function listStatement(countColumn: string): string {
  const total = '(SELECT total FROM counted)';
  return `
      WITH counted AS (SELECT coalesce((SELECT "${countColumn}" FROM apps WHERE id = $1), 0) AS total),
      page AS (
        SELECT ${PAGE_KEYS} FROM links
        WHERE links.app_id = $1 AND links.environment = $2 AND ${total} > $3
        ORDER BY links.created_at DESC, links.id DESC LIMIT $4 OFFSET $3)
      SELECT ${[...LINK_COLUMNS, 'click_count'].map((column) => `links.${column}`).join(', ')},
        counted.total, now() AS db_now
      FROM counted
      LEFT JOIN page ON true
      LEFT JOIN LATERAL (
        SELECT ${LINK_COLUMNS.map((column) => `links.${column}`).join(', ')},
          coalesce((SELECT link_clicks.click_count FROM link_clicks
                    WHERE link_clicks.link_id = links.id), 0) AS click_count
        FROM links
        WHERE links.id = page.id AND links.app_id = $1 AND links.environment = $2
        LIMIT 1
      ) AS links ON true
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
  const result = await pool.query<PageRow>(statement, [auth.app_id, auth.environment, 0, PER_PAGE]);
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
