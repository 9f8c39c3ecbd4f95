import { createServer } from 'node:http';
import type { ServerResponse } from 'node:http';
import { Redis } from 'ioredis';

/**
 * Baseline for the link host's click protocol: the fixed 302 of `redirect-server.ts`, answered
 * only once Redis has stored the request's click, the least any link host does that stores each
 * click and its token before it answers (the redirect's guarantee: a token is redeemable, and a
 * click survives the process, as soon as the client sees the answer). Per event-loop turn, one
 * script call for the turn's requests, as the redirect batches its lookups; per request the
 * script reads a cache entry (GET), stores a fresh token with a TTL unless it exists
 * (SET PX NX) and counts the click (HINCRBY). No analytics, no token minting or hashing, no
 * metrics, no routing: everything else the redirect does comes on top of this.
 *
 * Its keys are under REDIS_PREFIX (the bench deletes them afterwards).
 */

const port = Number(process.env.PORT);
const prefix = process.env.REDIS_PREFIX ?? 'lsbench-floor';
const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', {
  enableOfflineQueue: true,
});

/** The link host's cache entries number 1,000 here too (the bench's 1,000 random aliases). */
const ENTRIES = 1_000;
/** The size of an encoded resolution of a seeded link (fallback URL, ids, flags). */
const ENTRY_VALUE = `lnk_${'x'.repeat(26)} app_${'y'.repeat(26)} https://example.com/products/1 ${'z'.repeat(60)}`;
const TOKEN_TTL_MS = 3_600_000;
const entryKey = (n: number) => `${prefix}:entry:${n}`;
const pendingKey = `${prefix}:pending`;

/** KEYS: the pending hash, then (entry, token) per request; ARGV: the TTL, then link ids. */
const STORE_CLICKS = `
local counted = 0
for i = 1, (#KEYS - 1) / 2 do
  local entry = redis.call('GET', KEYS[i * 2])
  if redis.call('SET', KEYS[i * 2 + 1], ARGV[i + 1], 'PX', ARGV[1], 'NX') then
    redis.call('HINCRBY', KEYS[1], ARGV[i + 1], 1)
    counted = counted + 1
  end
end
return counted`;

redis.defineCommand('storeClicks', { lua: STORE_CLICKS });
type WithStoreClicks = Redis & {
  storeClicks(keyCount: number, ...args: string[]): Promise<number>;
};

let queued: ServerResponse[] = [];
let requests = 0;

function answer(res: ServerResponse): void {
  res.writeHead(302, {
    location: 'https://example.com/products/1',
    'cache-control': 'no-store',
    'content-length': '0',
  });
  res.end();
}

function sendQueued(): void {
  const batch = queued;
  queued = [];
  const keys: string[] = [pendingKey];
  const args: string[] = [String(TOKEN_TTL_MS)];
  for (let i = 0; i < batch.length; i++) {
    const n = requests++ % ENTRIES;
    // A token never seen before (a counter: no minting cost) and the link it counts for.
    keys.push(entryKey(n), `${prefix}:token:${requests}`);
    args.push(`lnk_${n}`);
  }
  (redis as WithStoreClicks).storeClicks(keys.length, ...keys, ...args).then(
    () => {
      for (const res of batch) answer(res);
    },
    () => {
      for (const res of batch) {
        res.writeHead(503, { 'content-length': '0' });
        res.end();
      }
    },
  );
}

const server = createServer((req, res) => {
  if (req.url === '/readyz') {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('ready');
    return;
  }
  if (queued.length === 0) setImmediate(sendQueued);
  queued.push(res);
});
server.keepAliveTimeout = 65_000;

async function start(): Promise<void> {
  const fill = redis.pipeline();
  for (let n = 0; n < ENTRIES; n++) fill.set(entryKey(n), ENTRY_VALUE);
  await fill.exec();
  server.listen(port, '127.0.0.1');
}

void start();
process.on('SIGTERM', () => {
  server.close();
  server.closeAllConnections();
  redis.disconnect();
});
