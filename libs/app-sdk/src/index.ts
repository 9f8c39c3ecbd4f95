export type { FetchLike, LinkServiceClientOptions } from './client';
export { LinkServiceClient, createClient, evidenceToSend, retryAfterSeconds } from './client';
export {
  CLICK_TOKEN_PARAMETER,
  clickTokenFromReferrer,
  clickTokenFromUrl,
  hostOfUrl,
  isClickTokenUrl,
  isOnLinkHost,
} from './click-tokens';
export type {
  Environment,
  Erasure,
  InstallEvidence,
  InstallMatch,
  InstallReport,
  JsonValue,
  LinkRef,
  MatchMethod,
  Platform,
  Resolution,
} from './contract';
export type { ClientErrorSlug, ErrorSlug, LinkServiceErrorInit, ServerErrorSlug } from './errors';
export { LinkServiceError, isLinkServiceError } from './errors';
