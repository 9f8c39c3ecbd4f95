import { linkHostFor } from '@linkservice/contracts';
import type { AppRow } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { quoted } from '../quoted';
import type { Failure, Result } from '../result';
import { fail, foundOr, ok } from '../result';
import type { AppsRepository } from './apps.repository';
import {
  deriveSubdomainKey,
  linkAllowanceProblem,
  normaliseAppName,
  randomSuffix,
  subdomainKeyProblem,
} from './app-rules';

/** An app as linkctl shows it (`--json` prints exactly these fields). */
export interface AppAdminView {
  id: string;
  name: string;
  subdomainKey: string;
  /** Always the live host, whatever the key's environment (decisions.md "Apps"). */
  linkHost: string;
  /** null: unlimited. */
  linkAllowance: number | null;
}

export interface CreateAppInput {
  name: string;
  /** Derived from the name plus a random suffix when omitted. */
  subdomainKey?: string;
  /** Omitted or null: unlimited. */
  linkAllowance?: number | null;
}

export type AppAdminFailure = Failure<
  | 'invalid_name'
  | 'invalid_subdomain_key'
  | 'subdomain_key_taken'
  | 'invalid_link_allowance'
  | 'app_not_found'
>;

export interface AppAdminOptions {
  linkDomain: string;
  /** Suffix source for derived subdomain keys; tests pass a fixed sequence to force collisions. */
  nextSuffix?: () => string;
  /** How many derived keys to try before giving up. */
  derivationAttempts?: number;
}

export class AppAdminService {
  private readonly nextSuffix: () => string;
  private readonly derivationAttempts: number;

  constructor(
    private readonly apps: AppsRepository,
    private readonly options: AppAdminOptions,
  ) {
    this.nextSuffix = options.nextSuffix ?? randomSuffix;
    this.derivationAttempts = options.derivationAttempts ?? 5;
  }

  async createApp(input: CreateAppInput): Promise<Result<AppAdminView, AppAdminFailure>> {
    const name = normaliseAppName(input.name);
    if ('problem' in name) {
      return fail({ code: 'invalid_name', message: `invalid app name: ${name.problem}` });
    }
    const linkAllowance = input.linkAllowance ?? null;
    const allowanceProblem = linkAllowanceProblem(linkAllowance);
    if (allowanceProblem) {
      return fail({
        code: 'invalid_link_allowance',
        message: `invalid link allowance: ${allowanceProblem}`,
      });
    }

    if (input.subdomainKey !== undefined) {
      const subdomainKey = input.subdomainKey;
      const problem = subdomainKeyProblem(subdomainKey);
      if (problem) {
        return fail({
          code: 'invalid_subdomain_key',
          message: `invalid subdomain key ${quoted(subdomainKey)}: ${problem}`,
        });
      }
      const row = await this.apps.insertUnlessSubdomainTaken({
        id: newId('app'),
        name: name.name,
        subdomain_key: subdomainKey,
        link_allowance: linkAllowance,
      });
      if (!row) {
        return fail({
          code: 'subdomain_key_taken',
          message: `subdomain key ${quoted(subdomainKey)} is already taken by another app`,
        });
      }
      return ok(this.toView(row));
    }

    // A derived key collides only by chance, so a fresh suffix is the whole remedy.
    for (let attempt = 0; attempt < this.derivationAttempts; attempt++) {
      const row = await this.apps.insertUnlessSubdomainTaken({
        id: newId('app'),
        name: name.name,
        subdomain_key: deriveSubdomainKey(name.name, this.nextSuffix()),
        link_allowance: linkAllowance,
      });
      if (row) return ok(this.toView(row));
    }
    return fail({
      code: 'subdomain_key_taken',
      message: `no free subdomain key found for ${quoted(name.name)} after ${this.derivationAttempts} attempts; choose one explicitly`,
    });
  }

  /** null: unlimited. Lowering it below the app's current link count only stops new links. */
  async setLinkAllowance(
    appId: string,
    linkAllowance: number | null,
  ): Promise<Result<AppAdminView, AppAdminFailure>> {
    const problem = linkAllowanceProblem(linkAllowance);
    if (problem) {
      return fail({
        code: 'invalid_link_allowance',
        message: `invalid link allowance: ${problem}`,
      });
    }
    return foundOr(
      await this.apps.updateLinkAllowance(appId, linkAllowance),
      this.toView,
      appNotFound(appId),
    );
  }

  async getApp(appId: string): Promise<Result<AppAdminView, AppAdminFailure>> {
    return foundOr(await this.apps.findById(appId), this.toView, appNotFound(appId));
  }

  private readonly toView = (row: AppRow): AppAdminView => ({
    id: row.id,
    name: row.name,
    subdomainKey: row.subdomain_key,
    linkHost: linkHostFor(row.subdomain_key, 'live', this.options.linkDomain),
    linkAllowance: row.link_allowance,
  });
}

export function appNotFound(appId: string): Failure<'app_not_found'> {
  return { code: 'app_not_found', message: `no app with id ${quoted(appId)}` };
}
