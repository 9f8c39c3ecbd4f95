export type {
  CreateInBatchesOptions,
  CreateLinkResult,
  CreateLinksResult,
  CreateOptions,
  LinkServiceClientOptions,
  RequestOptions,
  ResponseInfo,
} from './client';
export { LinkServiceClient, createClient } from './client';
export type { BatchChunk, BatchInterruption, MergedBatchReport } from './batches';
export { MAX_BATCH_ENTRIES, splitIntoChunks } from './batches';
export type {
  ClientErrorSlug,
  ErrorSlug,
  LinkServiceErrorCommon,
  LinkServiceErrorConstructor,
  LinkServiceErrorInit,
  LinkServiceErrorOf,
  RateLimitInfo,
} from './errors';
export { LinkServiceError, isCreateOutcomeUnknown, isLinkServiceError } from './errors';
export type { AbortSignalLike, FetchLike, FetchSignal, HeadersLike } from './http';
export {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENT_REPLAYED_HEADER,
  isValidIdempotencyKey,
} from './idempotency';
export type { RequestKind, RetryPolicy } from './retry';
export { DEFAULT_RETRY_POLICY, retryAfterSeconds } from './retry';
export type {
  Analytics,
  AnalyticsDimension,
  AnalyticsInterval,
  AnalyticsParams,
  AnalyticsResponse,
  ApiErrorSlug,
  App,
  AppResponse,
  ArchivedLinkResponse,
  BatchCreateInput,
  BatchEntryError,
  BatchEntryResult,
  BatchReport,
  ClickCounts,
  Environment,
  ErrorBody,
  JsonObject,
  JsonValue,
  Link,
  LinkAnalyticsParams,
  LinkCreateInput,
  LinkList,
  LinkPatchInput,
  LinkQrParams,
  LinkResponse,
  LinkSort,
  LinkStatus,
  ListLinksParams,
  Pagination,
  StoppedEarly,
  ListWebhookDeliveriesParams,
  Webhook,
  WebhookAttempt,
  WebhookCreateInput,
  WebhookDelivery,
  WebhookDeliveryList,
  WebhookDeliveryResponse,
  WebhookDeliveryStatus,
  WebhookEventType,
  WebhookList,
  WebhookPatchInput,
  WebhookResponse,
  WebhookSecretResponse,
} from './types';
export { ERROR_STATUS } from './types';
export { CLIENT_VERSION } from './version';
