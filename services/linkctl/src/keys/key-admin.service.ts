import { formatTimestamp } from '@linkservice/contracts';
import type { Environment, KeyType } from '@linkservice/db';
import { newId } from '@linkservice/db';
import { generatePublishableKey, generateSecretKey, hashSecretKey } from '@linkservice/keys';
import { appNotFound } from '../apps/app-admin.service';
import { quoted } from '../quoted';
import type { Failure, Result } from '../result';
import { fail, foundOr, ok } from '../result';
import type { KeyAdminRepository, StoredApiKey } from './key-admin.repository';

/** A key's record as the operator sees it: never the key's text, never its hash. */
export interface ApiKeyView {
  id: string;
  appId: string;
  environment: Environment;
  /** `secret` (the server API) or `publishable` (the app interface, /api/v1/sdk). */
  type: KeyType;
  createdAt: string;
  /** null while the key is active. */
  revokedAt: string | null;
}

export interface CreatedApiKey {
  key: ApiKeyView;
  /**
   * The key's whole text (`ls_sk_…` or `ls_pk_…`; `secret` in the JSON for either type). Shown
   * once: only its SHA-256 hash is stored, so it can never be shown again.
   */
  secret: string;
}

export interface RevokedApiKey {
  key: ApiKeyView;
  /** The key was revoked before this call; revokedAt is the first revocation's time. */
  alreadyRevoked: boolean;
  /**
   * The primary's WAL position once this call's revocation committed: the write fence of the
   * key's app and environment, so services reading from a replica stop accepting the key at
   * once (docs/operations.md). Undefined when the key was revoked before.
   */
  walPosition?: bigint;
}

export type KeyAdminFailure = Failure<'app_not_found' | 'key_not_found'>;

export class KeyAdminService {
  constructor(private readonly keys: KeyAdminRepository) {}

  /** A secret key unless `type` says publishable; the text names the type as the record does. */
  async createKey(input: {
    appId: string;
    environment: Environment;
    type?: KeyType;
  }): Promise<Result<CreatedApiKey, KeyAdminFailure>> {
    const type = input.type ?? 'secret';
    const secret =
      type === 'publishable'
        ? generatePublishableKey(input.environment)
        : generateSecretKey(input.environment);
    const row = await this.keys.insert({
      id: newId('key'),
      app_id: input.appId,
      environment: input.environment,
      type,
      key_hash: hashSecretKey(secret),
    });
    return foundOr(row, (stored) => ({ key: toView(stored), secret }), appNotFound(input.appId));
  }

  /** Idempotent: revoking a revoked key succeeds and keeps the first revokedAt. */
  async revokeKey(keyId: string): Promise<Result<RevokedApiKey, KeyAdminFailure>> {
    const revoked = await this.keys.revokeIfActive(keyId);
    if (revoked) {
      return ok({
        key: toView(revoked),
        alreadyRevoked: false,
        walPosition: await this.keys.walPosition(),
      });
    }
    // Rare path: tell an unknown key from one that was revoked before.
    const existing = await this.keys.findById(keyId);
    return existing
      ? ok({ key: toView(existing), alreadyRevoked: true })
      : fail({ code: 'key_not_found', message: `no key with id ${quoted(keyId)}` });
  }

  /** The app's keys in creation order, revoked ones included. */
  async listKeys(appId: string): Promise<Result<ApiKeyView[], KeyAdminFailure>> {
    const rows = await this.keys.listForApp(appId);
    return foundOr(rows, (found) => found.map(toView), appNotFound(appId));
  }
}

function toView(row: StoredApiKey): ApiKeyView {
  return {
    id: row.id,
    appId: row.app_id,
    environment: row.environment,
    type: row.type,
    createdAt: formatTimestamp(row.created_at),
    revokedAt: row.revoked_at ? formatTimestamp(row.revoked_at) : null,
  };
}
