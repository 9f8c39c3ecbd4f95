import type { ColumnType, Insertable, Selectable, Updateable } from 'kysely';

export type Environment = 'live' | 'test';

/** `secret`: the server API under /api/v1; `publishable`: only the app interface, /api/v1/sdk. */
export type KeyType = 'secret' | 'publishable';

export type InstallPlatform = 'ios' | 'android';

/** How an install was matched to a link (app-interface.md), in the order they are tried. */
export type MatchMethod = 'play_referrer' | 'clipboard' | 'opened_url';

/** Why a webhook endpoint is off: its owner's PATCH, 5 days of failures, or a 410 answer. */
export type WebhookDisabledReason = 'requested' | 'failing' | 'gone';

export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed';

/** timestamptz: read as Date, written as Date or an ISO string. */
type Timestamp = ColumnType<Date, Date | string, Date | string>;
type GeneratedTimestamp = ColumnType<Date, Date | string | undefined, Date | string>;
/** bigint comes back from pg as a string; parsed to number in the pool setup (see pool.ts). */
type Counter = ColumnType<number, number | undefined, number>;
/** A count only a trigger writes (see the app-link-counts migration); bigint, read as number. */
type TriggerCount = ColumnType<number, never, never>;

export interface Database {
  apps: {
    id: string;
    name: string;
    subdomain_key: string;
    link_allowance: number | null;
    /**
     * Links of the app per environment, archived ones included, kept by a trigger on links in
     * the inserting transaction (see the app-link-counts migration). Their sum is what the plan
     * allowance counts; each is an unfiltered list's total.
     */
    live_link_count: TriggerCount;
    test_link_count: TriggerCount;
    created_at: GeneratedTimestamp;
    updated_at: GeneratedTimestamp;
  };
  api_keys: {
    id: string;
    app_id: string;
    environment: Environment;
    type: ColumnType<KeyType, KeyType | undefined, never>;
    key_hash: Buffer;
    created_at: GeneratedTimestamp;
    revoked_at: Timestamp | null;
  };
  links: {
    id: string;
    app_id: string;
    environment: Environment;
    alias: string;
    web_fallback_url: string;
    ios_fallback_url: string | null;
    deep_link_data: ColumnType<
      Record<string, unknown> | null,
      string | null | undefined,
      string | null
    >;
    title: string | null;
    campaign: string | null;
    channel: string | null;
    feature: string | null;
    tags: ColumnType<string[], string[] | undefined, string[]>;
    expires_at: Timestamp | null;
    archived_at: Timestamp | null;
    created_at: GeneratedTimestamp;
    updated_at: GeneratedTimestamp;
    search_text: ColumnType<string, never, never>;
  };
  creation_requests: {
    id: string;
    app_id: string;
    status: 'done' | 'abandoned';
    results: ColumnType<unknown, string | null, string | null>;
    created_at: GeneratedTimestamp;
  };
  /**
   * Idempotency-Key records of the creation endpoints (see the idempotency-keys migration): the
   * owning attempt while it runs, its answer once it has one. Kept 24 hours.
   */
  idempotency_keys: {
    app_id: string;
    environment: Environment;
    key: string;
    request_hash: string;
    creation_request_id: string;
    owner_deadline: Timestamp;
    answer_status: number | null;
    answer_headers: ColumnType<Record<string, string> | null, string | null, string | null>;
    answer_body: string | null;
    created_at: GeneratedTimestamp;
  };
  /** Served by the link host at /.well-known/ (one row per app and environment). */
  app_associations: {
    app_id: string;
    environment: Environment;
    ios_team_id: string | null;
    ios_bundle_id: string | null;
    android_package_name: string | null;
    android_sha256_fingerprints: string[] | null;
    /** Serve the "Get the app" page to iOS instead of the 302 (app-interface.md); needs iOS set. */
    ios_deferred_page: ColumnType<boolean, boolean | undefined, boolean>;
    created_at: GeneratedTimestamp;
    updated_at: GeneratedTimestamp;
  };
  /** Installs reported through POST /sdk/installs (app-interface.md); no device data. */
  installs: {
    id: string;
    app_id: string;
    environment: Environment;
    platform: InstallPlatform;
    /** SHA-256 of the install secret (X-Install-Secret); the secret itself is never stored. */
    secret_hash: Buffer;
    match_method: MatchMethod | null;
    link_id: string | null;
    created_at: GeneratedTimestamp;
  };
  /** Where an app's events go (see the webhooks migration). */
  webhook_endpoints: {
    id: string;
    app_id: string;
    environment: Environment;
    url: string;
    description: string | null;
    event_types: string[];
    /** The signing secret, encrypted (@linkservice/webhooks' SecretBox). */
    secret: string;
    /** The secret before the last rotation, encrypted; signs beside `secret` until it expires. */
    previous_secret: string | null;
    previous_secret_expires_at: Timestamp | null;
    /** The first failed attempt since the last success. */
    failing_since: Timestamp | null;
    disabled_at: Timestamp | null;
    disabled_reason: WebhookDisabledReason | null;
    created_at: GeneratedTimestamp;
    updated_at: GeneratedTimestamp;
  };
  /** The outbox: one row per event, written by the statement that made the change. */
  webhook_events: {
    id: string;
    seq: ColumnType<number, never, never>;
    app_id: string;
    environment: Environment;
    type: string;
    /** What orders events: a link's id, or an install's. */
    subject: string;
    snapshot: ColumnType<Record<string, unknown>, string, never>;
    traceparent: string | null;
    occurred_at: GeneratedTimestamp;
  };
  /** One per event and subscribed endpoint. */
  webhook_deliveries: {
    id: string;
    event_id: string;
    endpoint_id: string;
    subject: string;
    seq: number;
    status: ColumnType<WebhookDeliveryStatus, WebhookDeliveryStatus | undefined>;
    attempts: Counter;
    next_attempt_at: GeneratedTimestamp;
    enqueued_at: Timestamp | null;
    created_at: GeneratedTimestamp;
    finished_at: Timestamp | null;
  };
  /** Each try of a delivery. */
  webhook_attempts: {
    delivery_id: string;
    attempt: number;
    started_at: Timestamp;
    duration_ms: number;
    outcome: string;
    response_status: number | null;
    response_excerpt: string | null;
  };
  /** The click token an install used up, one per install at most; erased with it. */
  install_clicks: {
    install_id: string;
    /** SHA-256 of the token, base64url: unique, so a token matches one install only. */
    token_hash: string;
    link_id: string;
    clicked_at: Timestamp;
  };
  /**
   * A link's counted clicks, one row per link once it was clicked (see the link-clicks
   * migration): kept apart from links so click traffic never writes a links row or index.
   * app_id and environment are the link's, for sort=clicks' index. No row: 0 clicks.
   */
  link_clicks: {
    link_id: string;
    app_id: string;
    environment: Environment;
    click_count: Counter;
  };
  /** Click batches already added to link_clicks (see the link-host migration). */
  link_click_batches: {
    id: string;
    applied_at: GeneratedTimestamp;
  };
  /** Click rollups per scope (a link, or '' for its app), hour and dimension values. */
  click_rollup_hours: ClickRollup & { hour: Timestamp };
  /** The same per UTC day (a date, read as 'YYYY-MM-DD'). */
  click_rollup_days: ClickRollup & { day: string };
  /** The daily rollup one dimension at a time: per scope, day, dimension and value. */
  click_dimension_days: {
    app_id: string;
    environment: Environment;
    link_id: string;
    day: string;
    /** A column name of ANALYTICS_DIMENSIONS (`country`, …, `utm_campaign`, `source`). */
    dimension: string;
    value: string;
    clicks: Counter;
    bot_clicks: Counter;
  };
  /** Totals and unique visitors per scope and UTC day (see the click-analytics migration). */
  link_click_days: {
    app_id: string;
    environment: Environment;
    link_id: string;
    day: string;
    clicks: Counter;
    bot_clicks: Counter;
    unique_visitors: Counter;
    /** A link's click_dimension_days rows of this day are complete (see the migration). */
    dimensions_derived: ColumnType<boolean, boolean | undefined, boolean>;
  };
  /** Totals per scope and month (its first day), for an app's top links. */
  link_click_months: {
    app_id: string;
    environment: Environment;
    link_id: string;
    month: string;
    clicks: Counter;
    bot_clicks: Counter;
  };
  /** Values of the capped dimensions admitted per scope and day (the rest count as 'other'). */
  click_dimension_values: {
    app_id: string;
    environment: Environment;
    link_id: string;
    day: string;
    dimension: string;
    value: string;
  };
}

/** The columns both click rollups share. */
interface ClickRollup {
  app_id: string;
  environment: Environment;
  /** A link's id, or '' for the app and environment as a whole. */
  link_id: string;
  country: string;
  platform: string;
  os: string;
  browser: string;
  referrer: string;
  utm_source: string;
  utm_medium: string;
  utm_campaign: string;
  /** `link` or `qr` (CLICK_SOURCES; see the click-source migration). */
  source: ColumnType<string, string | undefined, string>;
  clicks: Counter;
  bot_clicks: Counter;
}

export type AppRow = Selectable<Database['apps']>;
export type NewApp = Insertable<Database['apps']>;
export type ApiKeyRow = Selectable<Database['api_keys']>;
export type NewApiKey = Insertable<Database['api_keys']>;
export type LinkRow = Selectable<Database['links']>;
/** A link as reads give it: its row and its click count (link_clicks; 0 without a row). */
export type CountedLinkRow = LinkRow & { click_count: number };
export type NewLink = Insertable<Database['links']>;
export type LinkUpdate = Updateable<Database['links']>;
export type AppAssociationRow = Selectable<Database['app_associations']>;
export type InstallRow = Selectable<Database['installs']>;
