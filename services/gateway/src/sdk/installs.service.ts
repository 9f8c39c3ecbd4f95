import { linkUrlFor } from '@linkservice/contracts';
import type { MatchMethod } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { generateInstallSecret, hashInstallSecret, isInstallSecret } from '@linkservice/keys';
import type { ClickTokenRecord, ClickTokenStore } from '@linkservice/link-cache';
import type { Logger } from '@linkservice/logger';
import type { AuthContext } from '../auth/auth-context';
import type { EvidenceCandidate } from './install-evidence';
import { evidenceCandidates } from './install-evidence';
import type { InstallReport } from './install-request';
import type { InstallsRepository, MatchCandidate } from './installs.repository';
import type { ReceiptSigner } from './receipts';
import type { ResolvedLink } from './resolve.service';

/** POST /sdk/installs's 201 body (app-interface.md). */
export interface InstallReported {
  install: { id: string; secret: string };
  match:
    | { type: 'deterministic'; method: MatchMethod; clickedAt: string | null }
    | { type: 'none'; method: null; clickedAt: null };
  link: ResolvedLink['link'] | null;
  deepLinkData: Record<string, unknown> | null;
}

/** DELETE /sdk/installs/{id}'s 200 body. */
export interface InstallErased {
  erased: { installId: string; erasedAt: string; records: number };
  receipt: string;
}

/** `ins_` and a ULID: anything else names no install and is not looked up. */
const INSTALL_ID = /^ins_[0-9A-HJKMNP-TV-Z]{26}$/;

/**
 * A report races others only for its chosen token; each lost race uses one candidate up, so
 * this bounds the attempts with room to spare (three candidates at most).
 */
const MAX_RECORD_ATTEMPTS = 5;

export interface InstallsOptions {
  linkDomain: string;
  /** CLICK_TOKEN_TTL_SECONDS in ms: a token matches only this long after its click. */
  clickTokenTtlMs: number;
}

/**
 * Deferred deep linking and self-service erasure (app-interface.md): an install report is
 * matched to the tapped link by click tokens or the opened link only, never by anything about
 * the device, and a token is used up by the first install it matches. An installation erases
 * what is held about it with the secret it was given, and gets a signed receipt.
 */
export class InstallsService {
  constructor(
    private readonly installs: InstallsRepository,
    private readonly clickTokens: ClickTokenStore,
    private readonly receipts: ReceiptSigner,
    private readonly options: InstallsOptions,
    private readonly logger: Logger,
  ) {}

  async report(auth: AuthContext, report: InstallReport): Promise<InstallReported> {
    const host = { subdomainKey: auth.app.subdomainKey, environment: auth.environment };
    const candidates = await this.checkTokens(
      evidenceCandidates(report, host, this.options.linkDomain),
    );
    const secret = generateInstallSecret();
    const install = {
      id: newId('ins'),
      appId: auth.appId,
      environment: auth.environment,
      platform: report.platform,
      secretHash: hashInstallSecret(secret),
    };

    for (let attempt = 1; ; attempt++) {
      const outcome = await this.installs.record(install, candidates);
      if (outcome.recorded) {
        const { match } = outcome;
        // Not awaited: Postgres already refuses the token (see forgetUsedToken).
        if (match?.tokenHash) this.forgetUsedToken(match.tokenHash);
        return {
          install: { id: install.id, secret },
          match: match
            ? {
                type: 'deterministic',
                method: match.method,
                clickedAt: match.clickedAt?.toISOString() ?? null,
              }
            : { type: 'none', method: null, clickedAt: null },
          link: match && {
            id: match.linkId,
            alias: match.alias,
            url: linkUrlFor(
              host.subdomainKey,
              host.environment,
              match.alias,
              this.options.linkDomain,
            ),
            environment: host.environment,
          },
          deepLinkData: match?.deepLinkData ?? null,
        };
      }
      if (attempt === MAX_RECORD_ATTEMPTS) {
        throw new Error(`install not recorded after ${attempt} attempts lost to other reports`);
      }
    }
  }

  /**
   * Erases the install when the id, the secret, the app and the environment all agree;
   * undefined otherwise, whichever did not (the route answers one 404 for all of them).
   */
  async erase(
    auth: AuthContext,
    installId: string,
    secret: string | undefined,
  ): Promise<InstallErased | undefined> {
    if (secret === undefined || !isInstallSecret(secret) || !INSTALL_ID.test(installId)) {
      return undefined;
    }
    const target = {
      installId,
      appId: auth.appId,
      environment: auth.environment,
      secretHash: hashInstallSecret(secret),
    };
    const erasable = await this.installs.findErasable(target);
    if (!erasable) return undefined;
    // The install's used-up click is what refuses its token a second time; once it is erased,
    // only the token's Redis record could still match, while in its window. So that record
    // goes first (a Redis failure answers 503 with nothing erased), whatever became of the
    // removal tried when the token was used up.
    const { usedClick } = erasable;
    if (usedClick && usedClick.clickedAt.getTime() > Date.now() - this.options.clickTokenTtlMs) {
      await this.clickTokens.forget([usedClick.tokenHash]);
    }
    const erased = await this.installs.erase(target);
    if (!erased) return undefined;
    const claims = {
      installId,
      appId: auth.appId,
      environment: auth.environment,
      erasedAt: erased.erasedAt.toISOString(),
      records: erased.records,
    };
    return {
      erased: { installId, erasedAt: claims.erasedAt, records: claims.records },
      receipt: this.receipts.sign(claims),
    };
  }

  /**
   * The candidates whose evidence still holds, ready for the statement: each token's record
   * from Redis (one MGET for all), kept only while it is within its matching window. A token
   * that was never minted, has expired or was used up drops its candidate, the opened URL's
   * too (a token it carries must be valid).
   */
  private async checkTokens(candidates: EvidenceCandidate[]): Promise<MatchCandidate[]> {
    const hashes = candidates.flatMap((c) => (c.tokenHash === null ? [] : [c.tokenHash]));
    const records = new Map<string, ClickTokenRecord | null>();
    const found = await this.clickTokens.find(hashes);
    hashes.forEach((hash, i) => records.set(hash, found[i] ?? null));
    const oldestClick = Date.now() - this.options.clickTokenTtlMs;

    const checked: MatchCandidate[] = [];
    for (const candidate of candidates) {
      const alias = candidate.method === 'opened_url' ? candidate.alias : null;
      if (candidate.tokenHash === null) {
        checked.push({
          method: candidate.method,
          tokenHash: null,
          tokenLinkId: null,
          clickedAt: null,
          alias,
        });
        continue;
      }
      const record = records.get(candidate.tokenHash);
      if (!record || record.clickedAt < oldestClick) continue;
      checked.push({
        method: candidate.method,
        tokenHash: candidate.tokenHash,
        tokenLinkId: record.linkId,
        clickedAt: new Date(record.clickedAt),
        alias,
      });
    }
    return checked;
  }

  /**
   * Removes a used-up token's Redis record, beside the answer: Postgres already refuses the
   * token (its hash is in install_clicks), and the record expires on its own, so a failure is
   * logged and never delays or fails the report whose answer the app is waiting for.
   */
  private forgetUsedToken(tokenHash: string): void {
    this.clickTokens.forget([tokenHash]).catch((error: unknown) => {
      this.logger.warn(
        { err: error },
        'could not remove a used click token from Redis; it expires',
      );
    });
  }
}
