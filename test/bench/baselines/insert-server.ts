import type { IncomingMessage, ServerResponse } from 'node:http';
import { newId } from '@linkservice/db';
import { randomBase62 } from '@linkservice/keys';
import type { LinkRow } from './bare';
import {
  authenticate,
  createPool,
  LINK_COLUMNS,
  NOT_FOUND,
  send,
  listen,
  toLink,
  UNAUTHORISED,
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

const INSERT = `INSERT INTO links (id, app_id, environment, alias, web_fallback_url, title, campaign,
    tags, deep_link_data)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8::text[], $9::jsonb)
  RETURNING ${LINK_COLUMNS}`;

const MAX_BODY_BYTES = 2 * 1024 * 1024;

function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on('error', reject);
    req.on('end', () => {
      try {
        const body: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        resolve(
          typeof body === 'object' && body !== null && !Array.isArray(body)
            ? (body as Record<string, unknown>)
            : undefined,
        );
      } catch {
        resolve(undefined);
      }
    });
  });
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

async function createLink(req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readJson(req);
  const auth = await authenticate(pool, req);
  if (!auth) {
    send(res, 401, UNAUTHORISED);
    return;
  }
  if (!body || typeof body.webFallbackUrl !== 'string') {
    send(res, 422, { error: 'invalid_request', message: 'Invalid request' });
    return;
  }
  const tags = Array.isArray(body.tags) ? body.tags.filter((t) => typeof t === 'string') : [];
  const inserted = await pool.query<LinkRow>(INSERT, [
    newId('lnk'),
    auth.app_id,
    auth.environment,
    randomBase62(8),
    body.webFallbackUrl,
    text(body.title),
    text(body.campaign),
    tags,
    JSON.stringify(body.deepLinkData ?? {}),
  ]);
  const row = inserted.rows.at(0);
  if (!row) throw new Error('INSERT ... RETURNING gave no row');
  send(res, 201, { link: toLink(row, auth.subdomain_key) });
}

function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.method === 'POST' && req.url === '/api/v1/links') return createLink(req, res);
  send(res, 404, NOT_FOUND);
  return Promise.resolve();
}

listen('baseline insert server', pool, handle);
