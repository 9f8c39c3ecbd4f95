import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hashSecretKey, parseSecretKey } from '@linkservice/keys';
import pg from 'pg';

/**
 * Baseline for the read path: the least a server can do to answer GET /api/v1/links/{id} with
 * the same guarantees (SHA-256 of the bearer looked up in api_keys JOIN apps on every request,
 * then the link matched by id, app and environment), on bare node:http and pg with the gateway's
 * pool size. No framework, logging, request ids or validation beyond that.
 */

const port = Number(process.env.PORT);
const pool = new pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
});
pool.on('error', () => undefined);

const KEY_LOOKUP = `SELECT k.app_id, k.environment, a.subdomain_key
  FROM api_keys k JOIN apps a ON a.id = k.app_id
  WHERE k.key_hash = $1 AND k.revoked_at IS NULL`;
// The count is joined from link_clicks as the gateway reads it (links.click_count is the
// previous release's, see the link-clicks migration).
const LINK_READ = `SELECT links.*, coalesce(link_clicks.click_count, 0) AS click_count
  FROM links LEFT JOIN link_clicks ON link_clicks.link_id = links.id
  WHERE links.id = $1 AND links.app_id = $2 AND links.environment = $3`;
const LINK_PATH = /^\/api\/v1\/links\/([A-Za-z0-9_]+)$/;

interface KeyRow {
  app_id: string;
  environment: string;
  subdomain_key: string;
}

interface LinkRow {
  id: string;
  alias: string;
  environment: string;
  web_fallback_url: string;
  ios_fallback_url: string | null;
  deep_link_data: unknown;
  title: string | null;
  campaign: string | null;
  channel: string | null;
  feature: string | null;
  tags: string[];
  expires_at: Date | null;
  archived_at: Date | null;
  click_count: string;
  created_at: Date;
  updated_at: Date;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** The same fields the API's Link carries, so both servers serialise a comparable body. */
function toBody(row: LinkRow, subdomainKey: string): unknown {
  const host = row.environment === 'test' ? `${subdomainKey}-test` : subdomainKey;
  return {
    link: {
      id: row.id,
      alias: row.alias,
      url: `https://${host}.${process.env.LINK_DOMAIN ?? 'links.localhost'}/${row.alias}`,
      environment: row.environment,
      webFallbackUrl: row.web_fallback_url,
      iosFallbackUrl: row.ios_fallback_url,
      deepLinkData: row.deep_link_data,
      title: row.title,
      campaign: row.campaign,
      channel: row.channel,
      feature: row.feature,
      tags: row.tags,
      expiresAt: row.expires_at?.toISOString() ?? null,
      archivedAt: row.archived_at?.toISOString() ?? null,
      createdAt: row.created_at.toISOString(),
      updatedAt: row.updated_at.toISOString(),
      clickCount: Number(row.click_count),
      status: row.archived_at ? 'archived' : 'active',
    },
  };
}

async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (req.url === '/readyz') {
    await pool.query('SELECT 1');
    send(res, 200, { status: 'ready' });
    return;
  }
  const match = req.method === 'GET' ? LINK_PATH.exec(req.url ?? '') : null;
  if (!match) {
    send(res, 404, { error: 'not_found', message: 'Not found' });
    return;
  }
  const secret = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
  if (!parseSecretKey(secret)) {
    send(res, 401, { error: 'unauthorised', message: 'Unauthorised' });
    return;
  }
  const key = await pool.query<KeyRow>(KEY_LOOKUP, [hashSecretKey(secret)]);
  const auth = key.rows.at(0);
  if (!auth) {
    send(res, 401, { error: 'unauthorised', message: 'Unauthorised' });
    return;
  }
  const link = await pool.query<LinkRow>(LINK_READ, [match[1], auth.app_id, auth.environment]);
  const row = link.rows.at(0);
  if (!row) {
    send(res, 404, { error: 'not_found', message: 'Not found' });
    return;
  }
  send(res, 200, toBody(row, auth.subdomain_key));
}

const server = createServer((req, res) => {
  handle(req, res).catch((error: unknown) => {
    process.stderr.write(`baseline read server: ${String(error)}\n`);
    if (!res.headersSent) send(res, 500, { error: 'internal', message: 'Internal error' });
  });
});
server.keepAliveTimeout = 65_000;
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  void pool.end();
});
