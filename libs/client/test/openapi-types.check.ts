/**
 * The client's public types are written by hand on the contract (they read like the spec and
 * carry its comments); this file holds them to the API document. openapi-typescript turns
 * docs/openapi.json into openapi.generated.ts (`pnpm openapi`, drift-checked by
 * `pnpm openapi:check`), and `pnpm typecheck` compiles the assertions below, so a client type
 * that disagrees with the document fails the build.
 *
 * Two directions, each the one that matters:
 * - answers: whatever the document lets the gateway send is assignable to the client's type
 *   (the client can read every answer);
 * - requests: whatever the client's input types accept is assignable to the document's body
 *   (the client cannot send what the gateway does not take).
 * Both, for the enums clients branch on: the same values exactly.
 */
import type {
  App,
  AppResponse,
  ArchivedLinkResponse,
  BatchCreateInput,
  BatchReport,
  ErrorBody,
  JsonObject,
  Link,
  LinkCreateInput,
  LinkList,
  LinkPatchInput,
  LinkSort,
  LinkStatus,
  ListLinksParams,
  Pagination,
} from '../src';
import type { components, operations } from './openapi.generated';

type Schemas = components['schemas'];

/** Compiles only when From is assignable to To. */
type Assignable<From extends To, To> = [From, To];
/** Compiles only when A and B are the same set of values. */
type IsSame<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type Expect<T extends true> = T;

/**
 * The document says "a JSON object" (`{ [key: string]: unknown }`); the client narrows it to
 * JSON values, which is all JSON can carry. Compared with the member swapped for the client's.
 */
type WithJsonData<T> = T extends { deepLinkData: unknown }
  ? Omit<T, 'deepLinkData'> & { deepLinkData: JsonObject | null }
  : T;

type DocumentLink = WithJsonData<Schemas['Link']>;

export type Checks = [
  // Answers.
  Assignable<Schemas['AppAnswer']['app'], App>,
  Assignable<Omit<Schemas['AppAnswer'], 'app'> & { app: App }, AppResponse>,
  Assignable<DocumentLink, Link>,
  Assignable<Schemas['Pagination'], Pagination>,
  Assignable<{ links: DocumentLink[]; pagination: Schemas['Pagination'] }, LinkList>,
  Assignable<Omit<Schemas['ArchiveAnswer'], 'link'> & { link: Link }, ArchivedLinkResponse>,
  Assignable<Schemas['StoppedEarly'], NonNullable<BatchReport['stoppedEarly']>>,
  Assignable<
    Omit<Schemas['BatchReport'], 'results'> & { results: BatchResultOf<Link>[] },
    BatchReport
  >,
  Assignable<Schemas['Error'], ErrorBody | { error: 'expired'; message: string }>,
  Expect<IsSame<Schemas['Link']['status'], LinkStatus>>,
  Expect<IsSame<Schemas['Error']['error'], ErrorBody['error'] | 'expired'>>,
  // Requests.
  Assignable<LinkCreateInput, Schemas['LinkCreate']>,
  Assignable<LinkPatchInput, Schemas['LinkPatch']>,
  Assignable<BatchCreateInput, Schemas['LinkBatchCreate']>,
  Assignable<ListLinksParams, NonNullable<operations['listLinks']['parameters']['query']>>,
  Expect<
    IsSame<
      LinkSort,
      NonNullable<NonNullable<operations['listLinks']['parameters']['query']>['sort']>
    >
  >,
];

/** The document's batch entry with its link read as the client reads links. */
type BatchResultOf<L> = Schemas['BatchEntryResult'] extends infer E
  ? E extends { ok: true }
    ? Omit<E, 'link'> & { link: L }
    : E
  : never;
