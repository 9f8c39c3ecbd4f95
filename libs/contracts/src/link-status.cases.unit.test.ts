import { linkStatus } from './link';
import { LINK_STATUS_CASES } from './link-status.cases';

function dateOf(instant: string | null): Date | null {
  return instant === null ? null : new Date(instant);
}

describe('LINK_STATUS_CASES against linkStatus (the TypeScript copy)', () => {
  it.each(LINK_STATUS_CASES)('$name: $status', (c) => {
    const link = { archived_at: dateOf(c.archivedAt), expires_at: dateOf(c.expiresAt) };
    expect(linkStatus(link, new Date(c.now))).toBe(c.status);
  });

  it('says a link redirects exactly when it is not expired', () => {
    for (const c of LINK_STATUS_CASES) expect(c.redirects).toBe(c.status !== 'expired');
  });

  it('covers every status, and both sides of the expiry', () => {
    const statuses = new Set(LINK_STATUS_CASES.map((c) => c.status));
    expect([...statuses].sort()).toEqual(['active', 'archived', 'expired']);
    const atExpiry = LINK_STATUS_CASES.filter(
      (c) => c.archivedAt === null && c.expiresAt === c.now,
    );
    expect(atExpiry.map((c) => c.status)).toEqual(['expired']);
  });
});
