import type { IncomingMessage, ServerResponse } from 'node:http';
import type { LinkRow } from './bare';
import {
  createPool,
  INSERTED_COLUMNS,
  LINK_COLUMNS,
  NOT_FOUND,
  readCreation,
  send,
  listen,
  toLink,
} from './bare';

/**
 * Baseline for single creates: what a service that inserts directly does for POST
 * /api/v1/links, on bare node:http and pg with the gateway's pool size (bare.ts). Per request:
 * the JSON body, the key check (SHA-256 of the bearer in api_keys JOIN apps), one INSERT ...
 * RETURNING of the columns a created link has (a generated id and 8-character alias, the
 * fallback, title, campaign, tags and deepLinkData sent), and 201 with the Link. No queue,
 * worker, limiter, validation beyond JSON, logging or request ids; its app's link count is kept
 * by the same trigger as any insert's.
 */

const pool = createPool();

const INSERT = `INSERT INTO links (${INSERTED_COLUMNS})
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text[], $9::jsonb)
  RETURNING ${LINK_COLUMNS}`;

async function createLink(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const creation = await readCreation(pool, req, res);
  if (!creation) return;
  const inserted = await pool.query<LinkRow>(INSERT, creation.values);
  const row = inserted.rows.at(0);
  if (!row) throw new Error('INSERT ... RETURNING gave no row');
  send(res, 201, { link: toLink(row, creation.auth.subdomain_key) });
}

function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'POST' && req.url === '/api/v1/links') return createLink(req, res);
  send(res, 404, NOT_FOUND);
  return Promise.resolve();
}

listen('baseline insert server', pool, handle);
