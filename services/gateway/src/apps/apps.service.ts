import { linkHostFor } from '@linkservice/contracts';
import type { Environment } from '@linkservice/db';
import type { AuthContext } from '../auth/auth-context';

export interface AppView {
  app: { id: string; name: string; subdomainKey: string; linkHost: string };
  environment: Environment;
}

/**
 * The app behind the caller's key. Authentication already read the app row with the key (one
 * round trip per request), so describing it needs no further query and no repository.
 */
export class AppsService {
  constructor(private readonly linkDomain: string) {}

  current(auth: AuthContext): AppView {
    const { id, name, subdomainKey } = auth.app;
    return {
      // Always the live host, whatever the key's environment (decisions.md, Apps).
      app: { id, name, subdomainKey, linkHost: linkHostFor(subdomainKey, 'live', this.linkDomain) },
      environment: auth.environment,
    };
  }

  /** Only the caller's own app exists for it: any other id is "not found", never "forbidden". */
  byId(auth: AuthContext, appId: string): AppView | undefined {
    return appId === auth.appId ? this.current(auth) : undefined;
  }
}
