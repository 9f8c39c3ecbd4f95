/**
 * The app interface's answers (app-interface.md), as the gateway sends them under /api/v1/sdk.
 */

export type Environment = 'live' | 'test';

/** A JSON value, as `deepLinkData` holds it. */
export type JsonValue =
  string | number | boolean | null | JsonValue[] | { [member: string]: JsonValue };

/** What the app may know of a link: never its fallbacks, title, campaign or counts. */
export interface LinkRef {
  id: string;
  alias: string;
  /** The link's own URL on its link host, e.g. `https://acme.links.example.com/spring`. */
  url: string;
  environment: Environment;
}

/** POST /sdk/resolve: 200. */
export interface Resolution {
  link: LinkRef;
  /** What your server stored with the link for the app: where to route. */
  deepLinkData: { [member: string]: JsonValue } | null;
  /** The opened URL's query parameters; a name given more than once: its last value. */
  query: Record<string, string>;
}

export type Platform = 'ios' | 'android';

/** What the app found on its first launch; only what can name a link is sent. */
export interface InstallEvidence {
  platform: Platform;
  /**
   * Android: the install referrer from the Play Install Referrer API, as it hands it over. Only
   * its `ls_click=<token>` pair is sent; the rest (a gclid, utm_ campaign data) stays on the device.
   */
  playReferrer?: string;
  /** iOS: the clipboard's text, when `isClickTokenUrl` says it is one of your links. */
  clipboardUrl?: string;
  /** The link URL the app was opened with on its first launch, if any; sent only on `linkHosts`. */
  openedUrl?: string;
}

export type MatchMethod = 'play_referrer' | 'clipboard' | 'opened_url';

export type InstallMatch =
  | { type: 'deterministic'; method: MatchMethod; clickedAt: string | null }
  | { type: 'none'; method: null; clickedAt: null };

/** POST /sdk/installs: 201, matched or not. */
export interface InstallReport {
  install: {
    /** `ins_…`: keep it, with the secret, to erase this installation's data later. */
    id: string;
    /** Shown once; the server keeps only its SHA-256. Store it like a password. */
    secret: string;
  };
  match: InstallMatch;
  /** The link tapped before the install, or null when nothing matched. */
  link: LinkRef | null;
  deepLinkData: { [member: string]: JsonValue } | null;
}

/** DELETE /sdk/installs/{installId}: 200. */
export interface Erasure {
  erased: {
    installId: string;
    /** ISO 8601, milliseconds. */
    erasedAt: string;
    /** Rows deleted. */
    records: number;
  };
  /**
   * Compact JWS (EdDSA, Ed25519) over `{ installId, appId, environment, erasedAt, records }`;
   * anyone can verify it with the keys at `GET <gateway>/.well-known/jwks.json`. The proof of
   * erasure: the server keeps no trace of the install id, so keep the receipt if you need one.
   */
  receipt: string;
}
