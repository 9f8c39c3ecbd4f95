import type { ReadFence, ReplicaReads } from './replica-reads';
import type { Environment } from './schema';

/** The two Redis commands the fences use: an ioredis client fits. */
export interface FenceRedis {
  eval(script: string, numKeys: number, ...args: string[]): Promise<unknown>;
  get(key: string): Promise<string | null>;
}

/**
 * How long a fence outlives its app's last write: far past any replica lag worth serving reads
 * from. A read of an app without a fence goes to the replica (its misses still ask the primary).
 */
export const FENCE_TTL_SECONDS = 3_600;

/** Whose writes a fence covers: one app in one environment. */
export interface FenceScope {
  appId: string;
  environment: Environment;
}

/**
 * Sets the fence only forward: of two writers racing, the later WAL position stays. Positions are
 * kept as 16 hex digits, so comparing the strings compares the positions.
 */
const RAISE_FENCE = `
local current = redis.call('GET', KEYS[1])
if (not current) or current < ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
else
  redis.call('EXPIRE', KEYS[1], ARGV[2])
end
return 1`;

/**
 * The write fence of each app and environment, for read-your-writes over a lagging replica
 * (replica-reads.ts): after a write commits and before it is answered (creation, PATCH, archive;
 * linkctl's key revoke, since GET by id and resolve check the key on the replica), the writer
 * records the primary's WAL position in
 * `${REDIS_PREFIX}:write-fence:<env>:<appId>`; a replica read of that app is served only when
 * the replica had replayed that far. One key per app and environment, touched alone (one GET
 * per read, one script per write): no hash tag needed in Redis Cluster.
 *
 * The key expires `ttlSeconds` after the app's last write: by then any replica that is not lagging
 * by that much has it, and a read without a fence goes to the replica (a miss still asks the
 * primary). Reads of an app that never wrote in that window cost one GET and no fresh check.
 */
export class WriteFences {
  constructor(
    private readonly redis: FenceRedis,
    private readonly redisPrefix: string,
    private readonly ttlSeconds: number,
  ) {}

  private key({ appId, environment }: FenceScope): string {
    return `${this.redisPrefix}:write-fence:${environment}:${appId}`;
  }

  async raise(scope: FenceScope, lsn: bigint): Promise<void> {
    const value = lsn.toString(16).padStart(16, '0');
    await this.redis.eval(RAISE_FENCE, 1, this.key(scope), value, String(this.ttlSeconds));
  }

  /** The fence reads of this app must pass; {} when it has written nothing lately. */
  async get(scope: FenceScope): Promise<ReadFence> {
    const value = await this.redis.get(this.key(scope));
    return value === null ? {} : { lsn: BigInt(`0x${value}`) };
  }
}

/**
 * The fence a read of one app's rows must pass (ReadYourWrites.fenceFor); 'unknown' sends the
 * read to the primary.
 */
export type FenceLookup = (scope: FenceScope) => Promise<ReadFence | 'unknown'>;

/** No fence: every replica answer that is found will do (no replica, or tests). */
export const NO_FENCE: FenceLookup = () => Promise.resolve({});

/**
 * The fence of a read whose first row names its app and environment: 'unknown' without a row
 * (the primary answers a miss anyway).
 */
export function fenceOfFirstRow<Row>(
  fenceOf: FenceLookup,
  scopeOf: (row: Row) => FenceScope,
): (rows: readonly Row[]) => Promise<ReadFence | 'unknown'> {
  return (rows) => {
    const row = rows.at(0);
    return row ? fenceOf(scopeOf(row)) : Promise.resolve('unknown');
  };
}

/**
 * Read-your-writes for the gateway's links: what a writer records after its commit, and the fence
 * a reader passes to the replica reads. Without a replica both are free (nothing is recorded).
 */
export class ReadYourWrites {
  constructor(
    private readonly reads: Pick<ReplicaReads, 'enabled' | 'primaryPosition'>,
    private readonly fences: Pick<WriteFences, 'raise' | 'get'>,
  ) {}

  /**
   * After the commit, before the answer. A failure (Postgres or Redis) fails the request: the
   * change is saved, but the caller must not be told so while its next read could miss it.
   */
  async written(scope: FenceScope): Promise<void> {
    if (!this.reads.enabled) return;
    await this.fences.raise(scope, await this.reads.primaryPosition());
  }

  /** The fence of a read of this app's links; 'unknown' when Redis fails (the primary reads). */
  async fenceFor(scope: FenceScope): Promise<ReadFence | 'unknown'> {
    if (!this.reads.enabled) return {};
    return this.fences.get(scope).catch(() => 'unknown' as const);
  }
}
