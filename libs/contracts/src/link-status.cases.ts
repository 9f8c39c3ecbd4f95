import type { LinkStatus } from './link';

/**
 * One case of the link-status rule: archived when archivedAt is set; else expired when
 * expiresAt <= now; else active. The link host redirects every link that is not expired
 * (archived links keep redirecting to their fallback).
 */
export interface LinkStatusCase {
  /** What the case pins, for test names. */
  name: string;
  /** ISO 8601 instants (UTC, milliseconds), or null when unset. */
  archivedAt: string | null;
  expiresAt: string | null;
  now: string;
  status: LinkStatus;
  /** Whether the link host redirects (else it answers 410): `status !== 'expired'`. */
  redirects: boolean;
}

/**
 * The rule exists in several languages that cannot share code: contracts' linkStatus
 * (TypeScript), the gateway's linkStatusIs (SQL, evaluated by Postgres in the list filters),
 * link-cache's redirectsAt and its Lua. Plain data, so that every copy's tests run these same
 * cases: convert the instants with Date.parse where a copy takes epoch milliseconds.
 */
export const LINK_STATUS_CASES: readonly LinkStatusCase[] = [
  {
    name: 'no expiry, not archived',
    archivedAt: null,
    expiresAt: null,
    now: '2030-06-01T12:00:00.000Z',
    status: 'active',
    redirects: true,
  },
  {
    name: 'expires a millisecond after now',
    archivedAt: null,
    expiresAt: '2030-06-01T12:00:00.001Z',
    now: '2030-06-01T12:00:00.000Z',
    status: 'active',
    redirects: true,
  },
  {
    name: 'expires exactly now (the expiry is exclusive)',
    archivedAt: null,
    expiresAt: '2030-06-01T12:00:00.000Z',
    now: '2030-06-01T12:00:00.000Z',
    status: 'expired',
    redirects: false,
  },
  {
    name: 'expired a millisecond before now',
    archivedAt: null,
    expiresAt: '2030-06-01T11:59:59.999Z',
    now: '2030-06-01T12:00:00.000Z',
    status: 'expired',
    redirects: false,
  },
  {
    name: 'expired long ago',
    archivedAt: null,
    expiresAt: '1970-01-01T00:00:00.000Z',
    now: '2030-06-01T12:00:00.000Z',
    status: 'expired',
    redirects: false,
  },
  {
    name: 'archived, no expiry',
    archivedAt: '2030-05-01T00:00:00.000Z',
    expiresAt: null,
    now: '2030-06-01T12:00:00.000Z',
    status: 'archived',
    redirects: true,
  },
  {
    name: 'archived and expired: archived wins, and it keeps redirecting',
    archivedAt: '2030-05-01T00:00:00.000Z',
    expiresAt: '2030-05-15T00:00:00.000Z',
    now: '2030-06-01T12:00:00.000Z',
    status: 'archived',
    redirects: true,
  },
  {
    name: 'archived, expiring later',
    archivedAt: '2030-05-01T00:00:00.000Z',
    expiresAt: '2031-01-01T00:00:00.000Z',
    now: '2030-06-01T12:00:00.000Z',
    status: 'archived',
    redirects: true,
  },
  {
    name: 'archived after its expiry passed, read exactly at the expiry',
    archivedAt: '2030-06-01T12:00:00.000Z',
    expiresAt: '2030-06-01T12:00:00.000Z',
    now: '2030-06-01T12:00:00.000Z',
    status: 'archived',
    redirects: true,
  },
];
