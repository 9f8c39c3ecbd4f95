import type { Redis } from 'ioredis';
import type { Kysely } from 'kysely';
import type { Database } from '@linkservice/db';
import { pingDatabase } from './health.repository';

/** Bounded so a hung dependency fails /readyz instead of hanging it; keep probe timeouts above. */
export const READINESS_TIMEOUT_MS = 2_000;

export type Dependency = 'postgres' | 'redis';

export interface Readiness {
  ready: boolean;
  /** The dependencies that did not answer in time, with why (for logs, not for clients). */
  failures: { dependency: Dependency; reason: string }[];
}

async function probe(
  dependency: Dependency,
  check: () => Promise<unknown>,
  timeoutMs: number,
): Promise<Readiness['failures']> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    await Promise.race([check(), timeout]);
    return [];
  } catch (error) {
    return [{ dependency, reason: error instanceof Error ? error.message : String(error) }];
  } finally {
    clearTimeout(timer);
  }
}

/** Postgres answers `select 1` and Redis answers PING, both checked at once. */
export async function checkReadiness(
  { db, redis }: { db: Kysely<Database>; redis: Redis },
  timeoutMs = READINESS_TIMEOUT_MS,
): Promise<Readiness> {
  const results = await Promise.all([
    probe('postgres', () => pingDatabase(db), timeoutMs),
    probe('redis', () => redis.ping(), timeoutMs),
  ]);
  const failures = results.flat();
  return { ready: failures.length === 0, failures };
}
