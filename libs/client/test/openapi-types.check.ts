/**
 * The client's public types are written by hand on the contract (they read like the spec and
 * carry its comments); this file holds them to the API document. openapi-typescript turns
 * docs/openapi.json into openapi.generated.ts (`pnpm openapi`, drift-checked by
 * `pnpm openapi:check`), and `pnpm typecheck` compiles the assertions below, so a client type
 * that disagrees with the document fails the build.
 *
 * Both directions, member by member: the same members (none the document has that the client
 * lacks, and none the other way), each optional in both or in neither, and each member's values
 * the same set (each assignable to the other). A failing check names the member that differs.
 * The closed sets (LinkSort, LinkStatus, the error slugs) are generated from the document
 * (src/api-values.generated.ts), and checked here all the same.
 */
import type {
  Analytics,
  AnalyticsParams,
  AnalyticsResponse,
  App,
  AppResponse,
  ArchivedLinkResponse,
  BatchCreateInput,
  BatchEntryResult,
  BatchReport,
  ErrorBody,
  JsonObject,
  Link,
  LinkAnalyticsParams,
  LinkCreateInput,
  LinkList,
  LinkPatchInput,
  LinkQrParams,
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
} from '../src';
import type { components, operations } from './openapi.generated';

type Schemas = components['schemas'];

/** Compiles only when A and B are the same set of values. */
type IsSame<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];

/**
 * The members on which A and B differ: present in one only, optional in one only, or with
 * values that are not the same set. `never` when A and B have the same shape.
 */
type Mismatches<A, B> =
  | Exclude<keyof A, keyof B>
  | Exclude<keyof B, keyof A>
  | {
      [K in keyof A & keyof B]: IsSame<A[K], B[K]> extends true
        ? IsSame<K extends OptionalKeys<A> ? 1 : 0, K extends OptionalKeys<B> ? 1 : 0> extends true
          ? never
          : K
        : K;
    }[keyof A & keyof B];

type Same<A, B> = Mismatches<A, B>;

/** For the closed sets: never when A and B are the same set of values. */
type SameValues<A, B> = IsSame<A, B> extends true ? never : ['values differ', A, B];

/** Compiles only when every check is never; the error names the members that differ. */
type AllMatch<T extends readonly never[]> = T;

/**
 * The document says "a JSON object" (`{ [key: string]: unknown }`); the client narrows it to
 * JSON values, which is all JSON can carry. Compared with the member swapped for the client's.
 */
type WithJsonData<T> = T extends { deepLinkData?: unknown }
  ? Omit<T, 'deepLinkData'> &
      (undefined extends T['deepLinkData']
        ? { deepLinkData?: JsonObject | null }
        : { deepLinkData: JsonObject | null })
  : T;

type DocumentLink = WithJsonData<Schemas['Link']>;

/**
 * T with member K read as the client's type for it, where that member is checked on its own
 * (Link by DocumentLink, the batch entries by BatchResultOf, the slugs by their enum check).
 */
type WithLinks<T, K extends keyof T, V> = Omit<T, K> & { [P in K]: V };
type ListQuery = NonNullable<operations['listLinks']['parameters']['query']>;
type LinkAnalyticsQuery = NonNullable<operations['getLinkAnalytics']['parameters']['query']>;
type QrQuery = NonNullable<operations['getLinkQr']['parameters']['query']>;
type AnalyticsQuery = NonNullable<operations['getAnalytics']['parameters']['query']>;
type DocumentAnalytics = Schemas['Analytics'];
type DeliveriesQuery = NonNullable<operations['listWebhookDeliveries']['parameters']['query']>;

export type Checks = AllMatch<
  [
    // Answers.
    Same<Schemas['AppAnswer']['app'], App>,
    Same<Schemas['AppAnswer'], AppResponse>,
    Same<DocumentLink, Link>,
    Same<Schemas['Pagination'], Pagination>,
    Same<WithLinks<Schemas['LinkList'], 'links', Link[]>, LinkList>,
    Same<WithLinks<Schemas['ArchiveAnswer'], 'link', Link>, ArchivedLinkResponse>,
    Same<Schemas['StoppedEarly'], StoppedEarly>,
    Same<WithLinks<Schemas['BatchReport'], 'results', BatchEntryResult[]>, BatchReport>,
    Same<BatchResultOf<true>, Extract<BatchEntryResult, { ok: true }>>,
    Same<BatchResultOf<false>, Extract<BatchEntryResult, { ok: false }>>,
    Same<WithLinks<Schemas['Error'], 'error', ErrorBody['error']>, ErrorBody>,
    SameValues<Schemas['Link']['status'], LinkStatus>,
    SameValues<Schemas['Error']['error'], ErrorBody['error']>,
    // Requests.
    Same<WithJsonData<Schemas['LinkCreate']>, LinkCreateInput>,
    Same<WithJsonData<Schemas['LinkPatch']>, LinkPatchInput>,
    Same<WithLinks<Schemas['LinkBatchCreate'], 'links', LinkCreateInput[]>, BatchCreateInput>,
    Same<ListQuery, ListLinksParams>,
    Same<LinkAnalyticsQuery, LinkAnalyticsParams>,
    Same<AnalyticsQuery, AnalyticsParams>,
    Same<QrQuery, LinkQrParams>,
    Same<DocumentAnalytics, Analytics>,
    Same<DocumentAnalytics['totals'], Analytics['totals']>,
    Same<DocumentAnalytics['series'][number], Analytics['series'][number]>,
    Same<NonNullable<DocumentAnalytics['breakdown']>, NonNullable<Analytics['breakdown']>>,
    Same<
      NonNullable<DocumentAnalytics['topLinks']>[number],
      NonNullable<Analytics['topLinks']>[number]
    >,
    Same<Schemas['AnalyticsAnswer'], AnalyticsResponse>,
    SameValues<LinkSort, NonNullable<ListQuery['sort']>>,
    // Webhooks.
    Same<Schemas['Webhook'], Webhook>,
    Same<Schemas['WebhookAnswer'], WebhookResponse>,
    Same<Schemas['WebhookSecretAnswer'], WebhookSecretResponse>,
    Same<Schemas['WebhookList'], WebhookList>,
    Same<Schemas['WebhookCreate'], WebhookCreateInput>,
    Same<Schemas['WebhookPatch'], WebhookPatchInput>,
    Same<Schemas['WebhookDelivery'], WebhookDelivery>,
    Same<Schemas['WebhookAttempt'], WebhookAttempt>,
    Same<Schemas['WebhookDeliveryList'], WebhookDeliveryList>,
    Same<Schemas['WebhookDeliveryAnswer'], WebhookDeliveryResponse>,
    Same<DeliveriesQuery, ListWebhookDeliveriesParams>,
    SameValues<Schemas['Webhook']['eventTypes'][number], WebhookEventType>,
    SameValues<Schemas['WebhookDelivery']['status'], WebhookDeliveryStatus>,
  ]
>;

/** The document's batch entry of one outcome, its link read as the client reads links. */
type BatchResultOf<Ok extends boolean> =
  Extract<Schemas['BatchEntryResult'], { ok: Ok }> extends infer E
    ? E extends { link: unknown }
      ? Omit<E, 'link'> & { link: Link }
      : E
    : never;
