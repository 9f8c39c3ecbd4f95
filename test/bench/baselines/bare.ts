import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { RedisAddressOptions } from '@linkservice/creation';
import { redisOptionsFromUrl } from '@linkservice/creation';
import { newId } from '@linkservice/db';
import { hashSecretKey, parseSecretKey, randomBase62 } from '@linkservice/keys';
import pg from 'pg';

/**
 * What the bare baselines (read-server.ts, insert-server.ts, queued-insert-server.ts and its
 * worker) share: a pg Pool of the gateway's size, the key check the gateway makes on every
 * request (SHA-256 of the bearer looked up in api_keys JOIN apps, never cached; a prepared
 * statement, as the gateway's), a creation's body and row, the JSON answer and the Link fields
 * every answer shows.
 * No framework, logging, request ids or validation beyond that.
 */

export function createPool(): pg.Pool {
  const pool = new pg.Pool({
    connectionString: process.env.DATABASE_URL,
    max: Number(process.env.DATABASE_POOL_SIZE ?? 10),
  });
  pool.on('error', () => undefined);
  return pool;
}

const KEY_LOOKUP = `SELECT k.app_id, k.environment, a.subdomain_key
  FROM api_keys k JOIN apps a ON a.id = k.app_id
  WHERE k.key_hash = $1 AND k.revoked_at IS NULL`;

export interface KeyRow {
  app_id: string;
  environment: string;
  subdomain_key: string;
}

/** The unrevoked key the request's bearer names, looked up in Postgres; undefined means 401. */
export async function authenticate(
  pool: pg.Pool,
  req: IncomingMessage,
): Promise<KeyRow | undefined> {
  const secret = /^Bearer (.+)$/i.exec(req.headers.authorization ?? '')?.[1] ?? '';
  if (!parseSecretKey(secret)) return undefined;
  // A named statement, as the gateway's own lookup: each connection parses and plans it once.
  const key = await pool.query<KeyRow>({
    name: 'bare_key_lookup',
    text: KEY_LOOKUP,
    values: [hashSecretKey(secret)],
  });
  return key.rows.at(0);
}

/** REDIS_URL (default the local Redis) as BullMQ's connection options, as the services read it. */
export function redisOptions(): RedisAddressOptions {
  return redisOptionsFromUrl(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
}

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

/** The columns a created link is inserted with, in the order of `Creation.values`. */
export const INSERTED_COLUMNS = `id, app_id, environment, alias, web_fallback_url, title, campaign,
  tags, deep_link_data`;

/** A POST /links request read: its key and the values of its row (INSERTED_COLUMNS). */
export interface Creation {
  auth: KeyRow;
  values: [string, string, string, string, string, string | null, string | null, string[], string];
}

/**
 * The JSON body and the key check of a creation, and the row's values (a generated id and
 * 8-character alias, the fallback, title, campaign, tags and deepLinkData sent); undefined once
 * it answered 401 or 422.
 */
export async function readCreation(
  pool: pg.Pool,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<Creation | undefined> {
  const body = await readJson(req);
  const auth = await authenticate(pool, req);
  if (!auth) {
    send(res, 401, UNAUTHORISED);
    return undefined;
  }
  if (!body || typeof body.webFallbackUrl !== 'string') {
    send(res, 422, { error: 'invalid_request', message: 'Invalid request' });
    return undefined;
  }
  const tags = Array.isArray(body.tags)
    ? body.tags.filter((t): t is string => typeof t === 'string')
    : [];
  const values: Creation['values'] = [
    newId('lnk'),
    auth.app_id,
    auth.environment,
    randomBase62(8),
    body.webFallbackUrl,
    text(body.title),
    text(body.campaign),
    tags,
    JSON.stringify(body.deepLinkData ?? {}),
  ];
  return { auth, values };
}

export interface LinkRow {
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

/**
 * Every column a new Link is shown from. A new link has no click (counts live in link_clicks, a
 * row per clicked link), as the worker answers it.
 */
export const LINK_COLUMNS =
  'id, alias, environment, web_fallback_url, ios_fallback_url, deep_link_data, title, ' +
  'campaign, channel, feature, tags, expires_at, archived_at, 0 AS click_count, created_at, ' +
  'updated_at';

export function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

export const UNAUTHORISED = { error: 'unauthorised', message: 'Unauthorised' };
export const NOT_FOUND = { error: 'not_found', message: 'Not found' };

/** The same fields the API's Link carries, so both servers serialise a comparable body. */
export function toLink(row: LinkRow, subdomainKey: string, now = new Date()): unknown {
  const host = row.environment === 'test' ? `${subdomainKey}-test` : subdomainKey;
  const expired = row.expires_at !== null && row.expires_at.getTime() <= now.getTime();
  return {
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
    status: row.archived_at ? 'archived' : expired ? 'expired' : 'active',
  };
}

/** Answers `/readyz` once Postgres answers; every other request goes to `handle`. */
export function serve(
  name: string,
  pool: pg.Pool,
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    const answer =
      req.url === '/readyz'
        ? pool.query('SELECT 1').then(() => {
            send(res, 200, { status: 'ready' });
          })
        : handle(req, res);
    answer.catch((error: unknown) => {
      process.stderr.write(`${name}: ${String(error)}\n`);
      if (!res.headersSent) send(res, 500, { error: 'internal', message: 'Internal error' });
    });
  };
}

/**
 * Runs a baseline server on PORT (127.0.0.1) with keep-alive as the gateway's, and stops it and
 * its pool on SIGTERM.
 */
export function listen(
  name: string,
  pool: pg.Pool,
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): void {
  const server = createServer(serve(name, pool, handle));
  server.keepAliveTimeout = 65_000;
  server.listen(Number(process.env.PORT), '127.0.0.1');
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    void pool.end();
  });
}
