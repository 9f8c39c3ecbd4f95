/**
 * Redis keys of click counting, under the deployment's REDIS_PREFIX:
 * - `pending`: hash link id -> clicks not yet handed to a flusher (HINCRBY per redirect);
 * - `batch:<createdAtMs>:<uuid>`: a hash some flusher took over by renaming `pending`;
 * - `batches`: the set of batch keys not yet applied, so leftovers can be found without SCAN.
 */
export interface ClickKeys {
  pending: string;
  batches: string;
  batchPrefix: string;
}

export function clickKeys(prefix: string): ClickKeys {
  return {
    pending: `${prefix}:clicks:pending`,
    batches: `${prefix}:clicks:batches`,
    batchPrefix: `${prefix}:clicks:batch:`,
  };
}

export interface BatchName {
  key: string;
  /** `<createdAtMs>:<uuid>`: unique, and the id recorded in link_click_batches. */
  id: string;
  createdAt: number;
}

export function batchName(keys: ClickKeys, createdAt: number, uuid: string): BatchName {
  const id = `${createdAt}:${uuid}`;
  return { key: `${keys.batchPrefix}${id}`, id, createdAt };
}

export function parseBatchKey(keys: ClickKeys, key: string): BatchName | null {
  if (!key.startsWith(keys.batchPrefix)) return null;
  const id = key.slice(keys.batchPrefix.length);
  const createdAt = Number(id.slice(0, id.indexOf(':')));
  return Number.isSafeInteger(createdAt) ? { key, id, createdAt } : null;
}
