import { Redis } from 'ioredis';
import pg from 'pg';
import { stopContainers } from './containers';
import { RUN_MARKER } from './environment';
import { deleteKeysWithPrefix } from './redis';

/** Drops the run's database and deletes the run's Redis keys, once per run (see global-setup). */
export async function globalTeardownForRun(): Promise<void> {
  if (!process.env[RUN_MARKER]) return;
  Reflect.deleteProperty(process.env, RUN_MARKER);
  const { DATABASE_URL, REDIS_URL, REDIS_PREFIX } = process.env;
  if (DATABASE_URL && process.env.KEEP_TEST_DATABASE !== 'true') {
    const url = new URL(DATABASE_URL);
    const name = url.pathname.slice(1);
    url.pathname = '/postgres';
    const client = new pg.Client({ connectionString: url.toString() });
    await client.connect();
    await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(name)} WITH (FORCE)`);
    await client.end();
  }
  if (REDIS_URL && REDIS_PREFIX) {
    const redis = new Redis(REDIS_URL, { lazyConnect: true });
    await redis.connect();
    await deleteKeysWithPrefix(redis, REDIS_PREFIX);
    redis.disconnect();
  }
  await stopContainers();
}

module.exports = globalTeardownForRun;
