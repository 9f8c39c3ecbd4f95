import type { StartedPostgreSqlContainer } from '@testcontainers/postgresql';
import type { StartedRedisContainer } from '@testcontainers/redis';

let started: { postgres: StartedPostgreSqlContainer; redis: StartedRedisContainer } | undefined;

/**
 * Starts Postgres and Redis in containers when a Docker engine answers; returns null (use the
 * local services) when none does, as on CI machines without Docker.
 */
export async function startContainersIfWanted(): Promise<{
  databaseUrl: string;
  redisUrl: string;
} | null> {
  if (process.env.TESTCONTAINERS === 'off') return null;
  const { getContainerRuntimeClient } = await import('testcontainers');
  try {
    await getContainerRuntimeClient();
  } catch {
    return null;
  }
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const { RedisContainer } = await import('@testcontainers/redis');
  const [postgres, redis] = await Promise.all([
    new PostgreSqlContainer('postgres:15-alpine').withUsername('postgres').start(),
    new RedisContainer('redis:7-alpine').start(),
  ]);
  started = { postgres, redis };
  // Which images ran, as the engine reports them, in the run's log: CI shows the testcontainers
  // path ran on its engine's images.
  const client = await getContainerRuntimeClient();
  const imageOf = async (id: string) =>
    (await client.container.inspect(client.container.getById(id))).Config.Image;
  process.stderr.write(
    `testcontainers: started ${await imageOf(postgres.getId())} and ${await imageOf(redis.getId())}\n`,
  );
  // Teardown runs in the same process as setup, so the handles stay reachable.
  return { databaseUrl: postgres.getConnectionUri(), redisUrl: redis.getConnectionUrl() };
}

export async function stopContainers(): Promise<void> {
  if (!started) return;
  await Promise.all([started.postgres.stop(), started.redis.stop()]);
  started = undefined;
}
