/**
 * The secret-key API's resources, inputs and bodies (`/api/v1`), written by hand on the contract
 * (link-service-api.md with decisions.md; docs/openapi.json describes the same). Every public
 * type of the wire lives in this one file, field for field as the gateway sends and reads it,
 * so a type-level check (test/openapi-types.check.ts) holds it against the OpenAPI document.
 */

import type { ApiErrorSlug, LinkSort, LinkStatus, WebhookEventType } from './api-values.generated';

/** Every key belongs to one environment; all data is scoped to it. */
export type Environment = 'live' | 'test';

// The closed sets come from the API document (`pnpm openapi` generates them).
export type { ApiErrorSlug, LinkSort, LinkStatus, WebhookEventType } from './api-values.generated';
export { ERROR_STATUS } from './api-values.generated';

/** A JSON value, as `deepLinkData` holds it. */
export type JsonValue = string | number | boolean | null | JsonValue[] | JsonObject;

/** A JSON object: what `deepLinkData` is when set. */
export interface JsonObject {
  [member: string]: JsonValue;
}

/** The app a key belongs to. */
export interface App {
  /** `app_…` */
  id: string;
  name: string;
  /** Forms the host of link URLs. */
  subdomainKey: string;
  /** Always the live host, `<subdomainKey>.<link_domain>`, whatever the key's environment. */
  linkHost: string;
}

/** `GET /app` and `GET /apps/{appId}`: 200. */
export interface AppResponse {
  app: App;
  /** The environment of the key that asked. */
  environment: Environment;
}

/** A link, as every response shows it (single, list, batch, archive). */
export interface Link {
  /** `lnk_…` */
  id: string;
  /** Letters, digits, `-` and `_`; case-sensitive; never changes. */
  alias: string;
  /** `https://<subdomainKey>.<link_domain>/<alias>` (test: `<subdomainKey>-test.…`). */
  url: string;
  environment: Environment;
  /** Where a person without the app ends up (and Android, always). */
  webFallbackUrl: string;
  /** Used instead of `webFallbackUrl` on iOS; null when unset. */
  iosFallbackUrl: string | null;
  /** Handed to the app when the link opens it. */
  deepLinkData: JsonObject | null;
  title: string | null;
  campaign: string | null;
  channel: string | null;
  feature: string | null;
  /** Empty when none. */
  tags: string[];
  /** `YYYY-MM-DDThh:mm:ssZ` (second precision), or null. */
  expiresAt: string | null;
  /** `YYYY-MM-DDThh:mm:ss.sssZ`; null while not archived. */
  archivedAt: string | null;
  /** `YYYY-MM-DDThh:mm:ss.sssZ` */
  createdAt: string;
  /** `YYYY-MM-DDThh:mm:ss.sssZ`; moves only when something changed. */
  updatedAt: string;
  /** Redirecting visits on the link host, reflected within seconds. */
  clickCount: number;
  status: LinkStatus;
}

/**
 * `POST /links` body, and one entry of `POST /links/batch`. Only `webFallbackUrl` is required;
 * a field left out is null (tags: empty). Server-set fields are refused with a 422 naming them.
 */
export interface LinkCreateInput {
  /**
   * At most 128 of letters, digits, `-` and `_`, starting with a letter or digit; unique in the
   * app and environment (archived links keep theirs); some words are reserved. Left out or
   * null: the service generates one (a different one every time).
   */
  alias?: string | null;
  /** Absolute http(s) URL with a host, at most 2,048 characters. */
  webFallbackUrl: string;
  /** Absolute http(s) URL with a host, at most 2,048 characters. */
  iosFallbackUrl?: string | null;
  /** At most 8,000 characters as `JSON.stringify` writes it. */
  deepLinkData?: JsonObject | null;
  /** At most 200 characters. */
  title?: string | null;
  /** At most 200 characters. */
  campaign?: string | null;
  /** At most 200 characters. */
  channel?: string | null;
  /** At most 200 characters. */
  feature?: string | null;
  /** 1–60 characters each; duplicates and tags past the 25th are dropped silently. */
  tags?: string[];
  /** ISO 8601 with a zone (`Z` or `±hh:mm`), in the future; stored to the second. */
  expiresAt?: string | null;
}

/**
 * `PATCH /links/{linkId}` body: only the fields to change, each by the rule it has on create;
 * null clears a nullable field (webFallbackUrl cannot be null); `tags` replaces the whole list;
 * a new `expiresAt` must lie in the future; `{}` changes nothing. `alias` cannot change: the
 * current one is accepted, any other is a 422.
 */
export interface LinkPatchInput extends Partial<Omit<LinkCreateInput, 'alias'>> {
  alias?: string;
}

/**
 * `GET /links` query. Filters combine with AND. Unrecognised `status`/`sort` values and bad
 * `page`/`perPage` fall back to their defaults on the server, without error.
 */
export interface ListLinksParams {
  /** Case-insensitive substring of alias, title, campaign, channel or feature. */
  search?: string;
  /** Exact, case-sensitive match of one tag. */
  tag?: string;
  /** Default: every status. */
  status?: LinkStatus;
  /** Default `newest`. */
  sort?: LinkSort;
  /** 1-based; default 1. A page past the end is empty, with true pagination. */
  page?: number;
  /** Default 25; above 200 is capped to 200. */
  perPage?: number;
}

export interface Pagination {
  page: number;
  perPage: number;
  total: number;
  /** `ceil(total / perPage)`; 0 when there is nothing. */
  pageCount: number;
}

/** `GET /links`: 200. */
export interface LinkList {
  links: Link[];
  pagination: Pagination;
}

/** `GET /links/{linkId}`, `PATCH /links/{linkId}`: 200; `POST /links`: 201. */
export interface LinkResponse {
  link: Link;
}

/** `DELETE /links/{linkId}`: 200. Archiving is not deletion: the link keeps resolving. */
export interface ArchivedLinkResponse {
  /** With `archivedAt` set. */
  link: Link;
  /** Says it was archived, keeps resolving to its fallback, and the alias stays taken. */
  note: string;
}

/** `POST /links/batch` body: 1 to 100 entries. */
export interface BatchCreateInput {
  links: LinkCreateInput[];
}

/** Why one entry of a batch was not created. */
export type BatchEntryError = 'validation_failed' | 'rate_limited' | 'plan_limit_reached';

/** One tried entry of a batch, by its position in the request. */
export type BatchEntryResult =
  | { index: number; ok: true; link: Link }
  | {
      index: number;
      ok: false;
      error: BatchEntryError;
      /** For people. */
      message: string;
      /** With `validation_failed`: field name -> what is wrong with it. */
      fieldErrors?: Record<string, string>;
    };

/** Why a batch stopped part way, at which entry; every later entry is `notAttempted`. */
export interface StoppedEarly {
  reason: 'rate_limited' | 'plan_limit_reached';
  atIndex: number;
  message: string;
}

/**
 * `POST /links/batch`: 201 (every entry created) or 207 (anything else, even nothing created).
 * `created + failed + notAttempted` is the number of entries.
 */
export interface BatchReport {
  created: number;
  failed: number;
  notAttempted: number;
  /** Every tried entry, sorted by `index`; entries never tried are only counted. */
  results: BatchEntryResult[];
  stoppedEarly?: StoppedEarly;
}

/** Every failure's body. `fields` only ever comes with `invalid_request`. */
export interface ErrorBody {
  error: ApiErrorSlug;
  message: string;
  /** Field name -> message. Absent on the plan-allowance 422. */
  fields?: Record<string, string>;
}

/**
 * `GET /links/{linkId}/qr`'s parameters. The code encodes the link's `url` with `?qr=1`, which
 * the link host counts as a scan.
 */
export interface LinkQrParams {
  /** Default `svg`. */
  format?: 'svg' | 'png';
  /** Width and height in pixels, 64-2048; default 512. */
  size?: number;
  /** The quiet zone in modules, 0-16; default 4. */
  margin?: number;
  /** Error correction; default `M`. */
  level?: 'L' | 'M' | 'Q' | 'H';
  /** `#rrggbb` or `#rgb`, default `#000000`; darker than `background`, contrast >= 3:1. */
  color?: string;
  /** `#rrggbb` or `#rgb`, default `#ffffff`. */
  background?: string;
}

/** Buckets of an analytics series: UTC hours (ranges up to 31 days), days, or calendar months. */
export type AnalyticsInterval = 'hour' | 'day' | 'month';

/** What a breakdown groups clicks by. */
export type AnalyticsDimension =
  | 'country'
  | 'platform'
  | 'os'
  | 'browser'
  | 'referrer'
  | 'utmSource'
  | 'utmMedium'
  | 'utmCampaign'
  | 'source';

/**
 * `GET /links/{linkId}/analytics` query: every member optional. A bucket counts when its start
 * lies in [from, to); the range is at most 800 days (31 with `interval: 'hour'`). Filters take
 * one value each and combine with AND; values are compared as stored (UTM values trimmed and
 * lower-cased, countries upper-cased).
 */
export interface LinkAnalyticsParams {
  /** ISO 8601 with its offset, or `YYYY-MM-DD` (midnight UTC). Default: 30 days before `to`. */
  from?: string;
  /** Exclusive. Default: now. */
  to?: string;
  /** Default `day`. */
  interval?: AnalyticsInterval;
  /** The breakdown's dimension; none without it. */
  groupBy?: AnalyticsDimension;
  /** Breakdown values (and top links) listed, 1-100; default 10. */
  limit?: number;
  /** ISO 3166-1 alpha-2, or `unknown`. */
  country?: string;
  platform?: 'ios' | 'android' | 'desktop' | 'other';
  os?: 'ios' | 'android' | 'windows' | 'macos' | 'linux' | 'chromeos' | 'other';
  browser?:
    | 'chrome'
    | 'safari'
    | 'firefox'
    | 'edge'
    | 'samsung'
    | 'opera'
    | 'facebook'
    | 'instagram'
    | 'tiktok'
    | 'snapchat'
    | 'webview'
    | 'other';
  /** A host, `direct` (no referrer) or `other` (past the day's cap). */
  referrer?: string;
  utmSource?: string;
  utmMedium?: string;
  utmCampaign?: string;
  /** `link`: taps of the link URL; `qr`: scans of its QR code. */
  source?: 'link' | 'qr';
}

/** `GET /analytics` query: a link's, and the tag filter. */
export interface AnalyticsParams extends LinkAnalyticsParams {
  /** Only links carrying this tag. */
  tag?: string;
}

/** Clicks by people and by bots (crawlers and scripts that were redirected). */
export interface ClickCounts {
  clicks: number;
  botClicks: number;
}

/**
 * Click analytics (`GET /links/{linkId}/analytics`, `GET /analytics`). A link's clickCount
 * gained exactly `clicks + botClicks` over a range; a breakdown's values and `rest` add up to
 * the totals. Unique visitors are counted per link and UTC day.
 */
export interface Analytics {
  /** The link's analytics only. */
  linkId?: string;
  from: string;
  to: string;
  interval: AnalyticsInterval;
  /** The dimension filters applied, as compared. */
  filters: Record<string, string>;
  /** The tag filter, when given. */
  tag?: string;
  totals: ClickCounts & {
    /** Null with a dimension filter or an hourly interval. */
    uniqueVisitors: number | null;
    /** True when daily figures of several days (or links) were added. */
    uniqueVisitorsSummed: boolean;
  };
  /** Every bucket of the range, zeros included. */
  series: (ClickCounts & { start: string; uniqueVisitors: number | null })[];
  breakdown: {
    dimension: AnalyticsDimension;
    /** The most clicked `limit` values. */
    values: (ClickCounts & { value: string })[];
    /** The other values, summed. */
    rest: ClickCounts & { values: number };
  } | null;
  /** The app's most clicked links (`GET /analytics` only). */
  topLinks?: (ClickCounts & { linkId: string; alias: string; url: string; title: string | null })[];
}

/** `GET /analytics`, `GET /links/{linkId}/analytics`: 200. */
export interface AnalyticsResponse {
  analytics: Analytics;
}

/**
 * A webhook endpoint: where the app's events of one environment are POSTed, signed (Standard
 * Webhooks). Never shows its signing secret.
 */
export interface Webhook {
  /** `whk_…` */
  id: string;
  url: string;
  description: string | null;
  /** Distinct, in the API document's order. */
  eventTypes: WebhookEventType[];
  environment: Environment;
  /** `disabled`: nothing is sent and pending deliveries wait until it is enabled again. */
  status: 'enabled' | 'disabled';
  /** `requested` (a PATCH), `failing` (5 days of failures) or `gone` (a 410); null while enabled. */
  disabledReason: 'requested' | 'failing' | 'gone' | null;
  /** `YYYY-MM-DDThh:mm:ss.sssZ`; null while enabled. */
  disabledAt: string | null;
  /** The first failed attempt since the last success; null when the last one succeeded. */
  failingSince: string | null;
  /** Until when the secret replaced by the last rotation still signs; null when none does. */
  previousSecretExpiresAt: string | null;
  createdAt: string;
  /** Moves only when something changed. */
  updatedAt: string;
}

/**
 * `POST /webhooks` body. `url`: absolute, https in live (http allowed in test), no credentials
 * or fragment, at most 2,048 characters; its host must resolve to public addresses only.
 */
export interface WebhookCreateInput {
  url: string;
  /** At least one, each once. */
  eventTypes: WebhookEventType[];
  /** At most 500 characters. */
  description?: string | null;
}

/**
 * `PATCH /webhooks/{webhookId}` body: only the fields to change. `enabled: false` disables the
 * endpoint; `enabled: true` enables it and makes its pending deliveries due at once.
 */
export interface WebhookPatchInput extends Partial<WebhookCreateInput> {
  enabled?: boolean;
}

/** `GET /webhooks/{webhookId}`, `PATCH /webhooks/{webhookId}`: 200. */
export interface WebhookResponse {
  webhook: Webhook;
}

/** `POST /webhooks` (201), `POST /webhooks/{webhookId}/rotate-secret` (200). */
export interface WebhookSecretResponse {
  webhook: Webhook;
  /** `whsec_…`: shown only in this answer; keep it to verify signatures. */
  secret: string;
}

/** `GET /webhooks`: every endpoint of the key's app and environment, oldest first. */
export interface WebhookList {
  webhooks: Webhook[];
}

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** One attempt of a delivery. */
export interface WebhookAttempt {
  /** 1 for the first. */
  attempt: number;
  /** When it began. */
  at: string;
  durationMs: number;
  /** How it ended, as the delivery recorded it. */
  outcome: string;
  /** Null without an answer. */
  responseStatus: number | null;
  /** The start of the answer's body, as stored; null without one. */
  responseExcerpt: string | null;
}

/** One event sent (or to send) to one endpoint. */
export interface WebhookDelivery {
  /** `dlv_…` */
  id: string;
  /** `evt_…`, sent as `webhook-id` on every attempt. */
  eventId: string;
  eventType: WebhookEventType;
  status: WebhookDeliveryStatus;
  /** Attempts made so far. */
  attempts: number;
  createdAt: string;
  /** Null unless pending. */
  nextAttemptAt: string | null;
  /** Null while pending. */
  finishedAt: string | null;
  /** The last 10 attempts, newest first. */
  attemptLog: WebhookAttempt[];
}

/** `GET /webhooks/{webhookId}/deliveries` query; a bad value is `invalid_request`. */
export interface ListWebhookDeliveriesParams {
  /** 1 to 100; default 20. */
  limit?: number;
  /** Default: every status. */
  status?: WebhookDeliveryStatus;
  /** The previous page's `nextCursor`. */
  cursor?: string;
}

/** `GET /webhooks/{webhookId}/deliveries`: 200, newest first. */
export interface WebhookDeliveryList {
  deliveries: WebhookDelivery[];
  /** Pass as `cursor` for the next page; null on the last. */
  nextCursor: string | null;
}

/** `POST /webhooks/{webhookId}/deliveries/{deliveryId}/retry`: 202. */
export interface WebhookDeliveryResponse {
  delivery: WebhookDelivery;
}
