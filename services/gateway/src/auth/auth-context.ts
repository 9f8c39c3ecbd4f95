import type { Environment, KeyType } from '@linkservice/db';

/**
 * Who is calling, as the key record says: app and environment never come from the request.
 * Every /api/v1 handler (the SDK's too) scopes its work by `appId` and `environment`.
 */
export interface AuthContext {
  keyId: string;
  appId: string;
  environment: Environment;
  /** `secret` on the server API, `publishable` on /api/v1/sdk: a router accepts only its own. */
  type: KeyType;
  app: { id: string; name: string; subdomainKey: string };
}

/** What a route's combined load found (see combinedLoad): the caller, and what it read. */
export interface Authenticated<T> {
  auth: AuthContext;
  loaded: T;
}
