import { linkStatus, linkUrlFor, parseLinkUrl } from '@linkservice/contracts';
import type { Environment } from '@linkservice/db';
import type { Authenticated } from '../auth/auth-context';
import type { ReadYourWrites } from '@linkservice/db';
import type { ResolveRepository } from './resolve.repository';

/** POST /sdk/resolve's 200 body (app-interface.md). */
export interface ResolvedLink {
  link: { id: string; alias: string; url: string; environment: Environment };
  /** As stored, whatever its members are called (`__proto__` included). */
  deepLinkData: Record<string, unknown> | null;
  /** The opened URL's query parameters; a name given more than once: its last value. */
  query: Record<string, string>;
}

export type ResolveOutcome =
  | { kind: 'resolved'; answer: ResolvedLink }
  /** Another host, a malformed URL, an unknown alias, another app's or environment's link. */
  | { kind: 'not_found' }
  | { kind: 'expired' };

/**
 * The app interface's resolve: which link of the caller's app and environment a URL the app was
 * opened with names, and its deepLinkData. Reads only: nothing is counted or stored.
 */
export class ResolveService {
  constructor(
    private readonly resolutions: ResolveRepository,
    private readonly linkDomain: string,
    /** Replica reads' fences: a link changed by its app shows on the app's next resolve. */
    private readonly readYourWrites?: Pick<ReadYourWrites, 'fenceFor'>,
  ) {}

  /**
   * Authenticates and resolves in one round trip: undefined when no active key has this hash;
   * else the key's context and the outcome for its app and environment. A URL that names no
   * link of any app still has its key checked, by the same statement.
   */
  async resolveForKey(
    keyHash: Buffer,
    url: string,
  ): Promise<Authenticated<ResolveOutcome> | undefined> {
    const opened = parseLinkUrl(url, this.linkDomain);
    const fences = this.readYourWrites;
    const found = await this.resolutions.findForKey(
      keyHash,
      opened,
      fences && ((scope) => fences.fenceFor(scope)),
    );
    if (!found) return undefined;
    const { auth, link, now } = found;
    // The statement joins a link only under the key's own host, so a link here is the caller's.
    if (!opened || !link) return { auth, loaded: { kind: 'not_found' } };
    // Archived wins over expired, as on the link host: an archived link keeps resolving.
    const status = linkStatus({ archived_at: link.archivedAt, expires_at: link.expiresAt }, now);
    if (status === 'expired') return { auth, loaded: { kind: 'expired' } };
    return {
      auth,
      loaded: {
        kind: 'resolved',
        answer: {
          link: {
            id: link.id,
            alias: link.alias,
            url: linkUrlFor(auth.app.subdomainKey, link.environment, link.alias, this.linkDomain),
            environment: link.environment,
          },
          deepLinkData: link.deepLinkData,
          query: opened.query,
        },
      },
    };
  }
}
