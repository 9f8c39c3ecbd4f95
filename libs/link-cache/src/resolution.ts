/** What the link host needs to answer `GET /<alias>`: nothing more is cached. */
export interface LinkResolution {
  linkId: string;
  webFallbackUrl: string;
  iosFallbackUrl: string | null;
  /** Epoch milliseconds; compared with the clock on every request, never baked into the entry. */
  expiresAt: number | null;
  archived: boolean;
}

/** Stored for an alias that does not exist, so repeated misses do not reach Postgres. */
export const NEGATIVE_ENTRY = '-';

interface StoredResolution {
  i: string;
  w: string;
  s: string | null;
  e: number | null;
  a: boolean;
}

export function encodeResolution(resolution: LinkResolution | null): string {
  if (resolution === null) return NEGATIVE_ENTRY;
  const stored: StoredResolution = {
    i: resolution.linkId,
    w: resolution.webFallbackUrl,
    s: resolution.iosFallbackUrl,
    e: resolution.expiresAt,
    a: resolution.archived,
  };
  return JSON.stringify(stored);
}

/**
 * `null` for the negative marker; `undefined` for anything unreadable (an entry written by an
 * incompatible version), which callers treat as a miss.
 */
export function decodeResolution(value: string): LinkResolution | null | undefined {
  if (value === NEGATIVE_ENTRY) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    return undefined;
  }
  if (!isStoredResolution(parsed)) return undefined;
  return {
    linkId: parsed.i,
    webFallbackUrl: parsed.w,
    iosFallbackUrl: parsed.s,
    expiresAt: parsed.e,
    archived: parsed.a,
  };
}

function isStoredResolution(value: unknown): value is StoredResolution {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.i === 'string' &&
    typeof v.w === 'string' &&
    (v.s === null || typeof v.s === 'string') &&
    (v.e === null || typeof v.e === 'number') &&
    typeof v.a === 'boolean'
  );
}
