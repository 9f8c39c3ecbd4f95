import type { Tenant } from '../support/tenants';
import type { LoadJob } from './load-protocol';
import type { BenchSettings } from './settings';
import { seededAlias, seededLinkId } from './seed';

/** The process a scenario loads; baselines run beside the stack in processes of their own. */
export type Subject =
  | 'gateway'
  | 'redirect'
  | 'redirect-without-analytics'
  | 'baseline-read'
  | 'baseline-insert'
  | 'baseline-redirect'
  | 'baseline-redirect-redis'
  | 'baseline-queued-insert'
  | 'postgres';

/** What a scenario must reach, PASS/FAIL, relative to another scenario of the same run. */
export type Goal =
  /** perSecond >= min x the other scenario's perSecond */
  | { kind: 'throughput-ratio'; against: string; min: number }
  /** p50 <= factor x the other scenario's p50 + plusMs */
  | { kind: 'latency-vs'; against: string; factor: number; plusMs: number }
  /** links per second >= min x the other scenario's links per second */
  | { kind: 'links-ratio'; against: string; min: number }
  /** p50 <= ms */
  | { kind: 'p50-max'; ms: number };

export interface Scenario {
  id: string;
  title: string;
  subject: Subject;
  /** Links created per successful request (creation scenarios), for links/s. */
  linksPerRequest?: number;
  /** Shown as a ratio without a verdict, when there is no goal. */
  compareWith?: string;
  /**
   * With `compareWith`: measured in that line's alternating rounds, beside the line whose
   * target compares with it (as a target's two lines are), so the three sample the same
   * stretches of this machine.
   */
  alternates?: boolean;
  goal?: Goal;
  /**
   * A creation line's second target: CPU of the gateway and the worker together per created
   * link (warm-up included), in ms, at most this. Judged with `goal` on the same line.
   */
  maxCpuMsPerLink?: number;
  /**
   * Work done once right before the load (e.g. the clicks of `search-after-clicks`); what it
   * returns goes into the line's JSON as `details`. Such a line is never split into rounds
   * alternating with its baseline: the work cannot be undone between rounds.
   */
  before?: () => Promise<Record<string, unknown>>;
  /** The load to run, given where the subject listens. */
  job(origin: string): LoadJob;
}

export interface ScenarioInputs {
  settings: BenchSettings;
  databaseUrl: string;
  linkDomain: string;
  large: Tenant;
  largeLinks: number;
  /** A live publishable key of the large app, for the app interface (/api/v1/sdk). */
  largePublishableKey: string;
  creator: Tenant;
  baselineInserts: Tenant;
  /** The app the bare insert server creates in (its own, so its count trigger is its own). */
  insertServerApp: Tenant;
  /** An app of SMALL_APP_LINKS seeded links, for the list of a typical app. */
  small: Tenant;
  /** Creations in an app without webhook endpoints, and in one subscribed to link.created. */
  plainCreator: Tenant;
  webhookCreator: Tenant;
}

/** Links of the small app: the default list of an app of typical size. */
export const SMALL_APP_LINKS = 1_000;

/** Distinct seeded rows, so reads spread over the table instead of one hot row. */
function sampleRows(count: number, of: number): number[] {
  return Array.from({ length: count }, () => 1 + Math.floor(Math.random() * of));
}

const CREATE_ENTRY = {
  webFallbackUrl: 'https://example.com/landing',
  title: 'Bench link',
  campaign: 'bench',
  tags: ['bench', 'load'],
  deepLinkData: { screen: 'product', productId: 42 },
};
export const BATCH_SIZE = 100;

/** The creation lines under heavier concurrency: many clients creating in one app at once. */
export const MANY_CONNECTIONS = 50;

export function buildScenarios(inputs: ScenarioInputs): Scenario[] {
  const { settings, large, creator } = inputs;
  const timing = {
    durationSeconds: settings.durationSeconds,
    warmupSeconds: settings.warmupSeconds,
  };
  const auth = (tenant: Tenant): Record<string, string> => ({
    authorization: `Bearer ${tenant.live.secret}`,
  });
  const linkPaths = sampleRows(1_000, inputs.largeLinks).map(
    (n) => `/api/v1/links/${seededLinkId(n)}`,
  );
  // Three-digit campaigns each name exactly 1/1000 of the links and are no substring of another.
  const campaignSearches = Array.from(
    { length: 100 },
    () => `/api/v1/links?search=campaign-${100 + Math.floor(Math.random() * 900)}`,
  );
  const redirectPaths = sampleRows(1_000, inputs.largeLinks).map((n) => `/${seededAlias(n)}`);
  const linkHost = `${large.subdomainKey}.${inputs.linkDomain}`;
  // What an app hands to resolve when a link opened it: the link's URL with a query.
  const resolveBodies = sampleRows(1_000, inputs.largeLinks).map((n) =>
    JSON.stringify({ url: `https://${linkHost}/${seededAlias(n)}?utm_source=bench` }),
  );
  // What an app reports on its first launch when a link opened it (no token: the link itself).
  const installBodies = sampleRows(1_000, inputs.largeLinks).map((n) =>
    JSON.stringify({
      platform: 'ios',
      openedUrl: `https://${linkHost}/${seededAlias(n)}?utm_source=bench`,
    }),
  );
  const http = (
    origin: string,
    fields: Pick<LoadJob & { kind: 'http' }, 'method' | 'paths' | 'headers' | 'expectStatus'> & {
      body?: string;
      bodies?: string[];
      connections: number;
    },
  ): LoadJob => ({ kind: 'http', origin, ...timing, ...fields });
  // A baseline and the scenario compared with it must be driven identically: one load each.
  const getLinkLoad = (origin: string): LoadJob =>
    http(origin, {
      method: 'GET',
      paths: linkPaths,
      headers: auth(large),
      expectStatus: 200,
      connections: settings.connections,
    });
  const smallListLoad = (origin: string): LoadJob =>
    http(origin, {
      method: 'GET',
      paths: ['/api/v1/links'],
      headers: auth(inputs.small),
      expectStatus: 200,
      connections: 1,
    });
  const concurrentCreateLoad =
    (tenant: Tenant, connections = settings.connections) =>
    (origin: string): LoadJob =>
      http(origin, {
        method: 'POST',
        paths: ['/api/v1/links'],
        headers: { ...auth(tenant), 'content-type': 'application/json' },
        body: JSON.stringify(CREATE_ENTRY),
        expectStatus: 201,
        connections,
      });
  // What a person's tap carries that analytics read: a phone's user agent, a referrer, UTM.
  const tappedPaths = redirectPaths.map(
    (path, index) => `${path}?utm_source=bench&utm_campaign=c${index % 20}`,
  );
  const tapLoad = (origin: string): LoadJob =>
    http(origin, {
      method: 'GET',
      paths: tappedPaths,
      headers: {
        host: linkHost,
        'user-agent':
          'Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X) AppleWebKit/605.1.15 ' +
          '(KHTML, like Gecko) Version/17.4 Mobile/15E148 Safari/604.1',
        referer: 'https://news.example.com/story?id=1',
      },
      expectStatus: 302,
      connections: settings.connections,
    });
  const redirectLoad = (origin: string): LoadJob =>
    http(origin, {
      method: 'GET',
      paths: redirectPaths,
      headers: { host: linkHost },
      expectStatus: 302,
      connections: settings.connections,
    });

  return [
    {
      id: 'baseline-get-link',
      title: 'baseline: node:http + pg, key lookup + link read',
      subject: 'baseline-read',
      job: getLinkLoad,
    },
    {
      id: 'get-link',
      title: 'GET /links/{id}',
      subject: 'gateway',
      goal: { kind: 'throughput-ratio', against: 'baseline-get-link', min: 0.7 },
      job: getLinkLoad,
    },
    {
      id: 'resolve',
      title: 'POST /sdk/resolve (publishable key)',
      subject: 'gateway',
      // Beside get-link: the app interface's read next to the secret-key read of one link.
      compareWith: 'get-link',
      job: (origin) =>
        http(origin, {
          method: 'POST',
          paths: ['/api/v1/sdk/resolve'],
          headers: {
            authorization: `Bearer ${inputs.largePublishableKey}`,
            'content-type': 'application/json',
          },
          bodies: resolveBodies,
          expectStatus: 200,
          connections: settings.connections,
        }),
    },
    {
      id: 'install-report',
      title: 'POST /sdk/installs (opened link, recorded)',
      subject: 'gateway',
      // Beside resolve: the same link read, plus recording the install in the same statement.
      compareWith: 'resolve',
      job: (origin) =>
        http(origin, {
          method: 'POST',
          paths: ['/api/v1/sdk/installs'],
          headers: {
            authorization: `Bearer ${inputs.largePublishableKey}`,
            'content-type': 'application/json',
          },
          bodies: installBodies,
          expectStatus: 201,
          connections: settings.connections,
        }),
    },
    // A link's QR code at the default size: the link read of get-link, then drawing the image
    // (no If-None-Match: every answer is drawn). No target: the answers per second are the line.
    ...(['svg', 'png'] as const).map((format): Scenario => ({
      id: `qr-${format}`,
      title: `GET /links/{id}/qr?format=${format} (512 px)`,
      subject: 'gateway',
      compareWith: 'get-link',
      job: (origin) =>
        http(origin, {
          method: 'GET',
          paths: linkPaths.map((path) => `${path}/qr?format=${format}`),
          headers: auth(large),
          expectStatus: 200,
          connections: settings.connections,
        }),
    })),
    {
      id: 'list-default',
      title: `GET /links (default page, ${formatCount(inputs.largeLinks)} links)`,
      subject: 'gateway',
      // What the page shows plus the stored total: the sort index's first 25 entries.
      goal: { kind: 'p50-max', ms: 5 },
      job: (origin) =>
        http(origin, {
          method: 'GET',
          paths: ['/api/v1/links'],
          headers: auth(large),
          expectStatus: 200,
          connections: 1,
        }),
    },
    {
      id: 'baseline-list-small',
      title: `baseline: node:http + pg, key lookup + default page (${formatCount(SMALL_APP_LINKS)} links)`,
      subject: 'baseline-read',
      job: smallListLoad,
    },
    {
      id: 'list-small',
      title: `GET /links (default page, ${formatCount(SMALL_APP_LINKS)} links)`,
      subject: 'gateway',
      goal: { kind: 'latency-vs', against: 'baseline-list-small', factor: 1.2, plusMs: 0 },
      job: smallListLoad,
    },
    {
      id: 'search-campaign',
      title: `GET /links?search=campaign-NNN (${formatCount(inputs.largeLinks / 1000)} hits)`,
      subject: 'gateway',
      goal: { kind: 'p50-max', ms: 50 },
      job: (origin) =>
        http(origin, {
          method: 'GET',
          paths: campaignSearches,
          headers: auth(large),
          expectStatus: 200,
          connections: 1,
        }),
    },
    {
      id: 'search-broad',
      title: `GET /links?search=email (${formatCount(inputs.largeLinks / 4)} hits, info)`,
      subject: 'gateway',
      job: (origin) =>
        http(origin, {
          method: 'GET',
          paths: ['/api/v1/links?search=email'],
          headers: auth(large),
          expectStatus: 200,
          connections: 1,
        }),
    },
    {
      id: 'baseline-insert-1',
      title: 'baseline: INSERT 1 row via pg',
      subject: 'postgres',
      linksPerRequest: 1,
      job: () => ({
        kind: 'sql-insert',
        databaseUrl: inputs.databaseUrl,
        appId: inputs.baselineInserts.appId,
        rowsPerStatement: 1,
        ...timing,
      }),
    },
    {
      // The lone creation's floor in the shape the brief fixes (a worker behind BullMQ), with
      // nothing else: alternates with the two lines around it.
      id: 'baseline-queued-insert-1',
      title: 'baseline: the bare insert server handing its INSERT to a worker through BullMQ',
      subject: 'baseline-queued-insert',
      linksPerRequest: 1,
      compareWith: 'baseline-insert-1',
      alternates: true,
      job: concurrentCreateLoad(inputs.insertServerApp, 1),
    },
    {
      id: 'create-single',
      title: 'POST /links (1 connection)',
      subject: 'gateway',
      linksPerRequest: 1,
      goal: { kind: 'latency-vs', against: 'baseline-insert-1', factor: 3, plusMs: 1 },
      job: (origin) =>
        http(origin, {
          method: 'POST',
          paths: ['/api/v1/links'],
          headers: { ...auth(creator), 'content-type': 'application/json' },
          body: JSON.stringify(CREATE_ENTRY),
          expectStatus: 201,
          connections: 1,
        }),
    },
    {
      id: 'baseline-insert-100',
      title: `baseline: INSERT ${BATCH_SIZE} rows via pg`,
      subject: 'postgres',
      linksPerRequest: BATCH_SIZE,
      job: () => ({
        kind: 'sql-insert',
        databaseUrl: inputs.databaseUrl,
        appId: inputs.baselineInserts.appId,
        rowsPerStatement: BATCH_SIZE,
        ...timing,
      }),
    },
    {
      id: 'create-batch',
      title: `POST /links/batch (${BATCH_SIZE} entries, 1 connection)`,
      subject: 'gateway',
      linksPerRequest: BATCH_SIZE,
      compareWith: 'baseline-insert-100',
      goal: { kind: 'links-ratio', against: 'create-single', min: 10 },
      job: (origin) =>
        http(origin, {
          method: 'POST',
          paths: ['/api/v1/links/batch'],
          headers: { ...auth(creator), 'content-type': 'application/json' },
          body: JSON.stringify({ links: Array.from({ length: BATCH_SIZE }, () => CREATE_ENTRY) }),
          expectStatus: 201,
          connections: 1,
        }),
    },
    {
      id: 'baseline-insert-server',
      title: 'baseline: node:http + pg, key lookup + INSERT ... RETURNING',
      subject: 'baseline-insert',
      linksPerRequest: 1,
      job: concurrentCreateLoad(inputs.insertServerApp),
    },
    {
      // The floor of the line below in the shape the brief fixes (see baseline-queued-insert-1).
      id: 'baseline-queued-insert-server',
      title: 'baseline: the same, its INSERTs handed to a worker through BullMQ (group commit)',
      subject: 'baseline-queued-insert',
      linksPerRequest: 1,
      compareWith: 'baseline-insert-server',
      alternates: true,
      job: concurrentCreateLoad(inputs.insertServerApp),
    },
    {
      id: 'create-single-concurrent',
      title: `POST /links (${settings.connections} connections, one app)`,
      subject: 'gateway',
      linksPerRequest: 1,
      goal: { kind: 'throughput-ratio', against: 'baseline-insert-server', min: 1 },
      maxCpuMsPerLink: 1,
      job: concurrentCreateLoad(creator),
    },
    {
      id: 'baseline-insert-server-50',
      title: `baseline: the same bare insert server, ${MANY_CONNECTIONS} connections`,
      subject: 'baseline-insert',
      linksPerRequest: 1,
      job: concurrentCreateLoad(inputs.insertServerApp, MANY_CONNECTIONS),
    },
    {
      // Where group commit should lead: one job and one transaction for many waiting requests,
      // against one INSERT per request queueing on the app's row.
      id: 'create-single-concurrent-50',
      title: `POST /links (${MANY_CONNECTIONS} connections, one app)`,
      subject: 'gateway',
      linksPerRequest: 1,
      goal: { kind: 'throughput-ratio', against: 'baseline-insert-server-50', min: 1 },
      maxCpuMsPerLink: 1,
      job: concurrentCreateLoad(creator, MANY_CONNECTIONS),
    },
    {
      id: 'create-without-webhook',
      title: `POST /links (${settings.connections} connections), an app without webhooks`,
      subject: 'gateway',
      linksPerRequest: 1,
      job: concurrentCreateLoad(inputs.plainCreator),
    },
    {
      // Every creation writes its link.created event and the worker delivers it meanwhile.
      id: 'create-with-webhook',
      title: `POST /links (${settings.connections} connections), one webhook on link.created`,
      subject: 'gateway',
      linksPerRequest: 1,
      goal: { kind: 'throughput-ratio', against: 'create-without-webhook', min: 0.9 },
      job: concurrentCreateLoad(inputs.webhookCreator),
    },
    {
      id: 'baseline-redirect',
      title: 'baseline: node:http fixed 302',
      subject: 'baseline-redirect',
      job: redirectLoad,
    },
    {
      // What storing each click and its token before the answer costs by itself (the floor of
      // the redirect line): alternates with the two lines around it.
      id: 'baseline-redirect-redis',
      title: 'baseline: the fixed 302 after one Redis script per turn storing its clicks',
      subject: 'baseline-redirect-redis',
      compareWith: 'baseline-redirect',
      alternates: true,
      job: redirectLoad,
    },
    {
      id: 'redirect',
      title: 'redirect GET https://<sub>.<domain>/<alias>',
      subject: 'redirect',
      goal: { kind: 'throughput-ratio', against: 'baseline-redirect', min: 0.6 },
      job: redirectLoad,
    },
    {
      id: 'redirect-without-analytics',
      title: 'redirect, a phone tap (user agent, referrer, UTM), ANALYTICS_ENABLED=false',
      subject: 'redirect-without-analytics',
      job: tapLoad,
    },
    {
      id: 'redirect-analytics',
      title: 'redirect, the same taps with click analytics (the same build)',
      subject: 'redirect',
      goal: { kind: 'throughput-ratio', against: 'redirect-without-analytics', min: 0.9 },
      job: tapLoad,
    },
  ];
}

/**
 * The scenarios in the order they are measured, grouped: a target's baseline with the later
 * lines whose target compares with it, and those that say they alternate with it; a group's
 * lines alternate in rounds. A line with `before` is never in a group (its work cannot be undone
 * between rounds), and one listed before its baseline runs alone, as the baseline then does.
 */
export function measurementGroups(scenarios: readonly Scenario[]): Scenario[][] {
  const ids = new Set(scenarios.map((scenario) => scenario.id));
  const partnersOf = new Map<string, Scenario[]>();
  for (const scenario of scenarios) {
    if (scenario.before) continue;
    const { goal } = scenario;
    const against =
      goal?.kind === 'throughput-ratio' || goal?.kind === 'latency-vs'
        ? goal.against
        : scenario.alternates
          ? scenario.compareWith
          : undefined;
    if (against === undefined || !ids.has(against)) continue;
    partnersOf.set(against, [...(partnersOf.get(against) ?? []), scenario]);
  }
  const grouped = new Set<string>();
  const groups: Scenario[][] = [];
  for (const scenario of scenarios) {
    if (grouped.has(scenario.id)) continue;
    const partners = (partnersOf.get(scenario.id) ?? []).filter((p) => !grouped.has(p.id));
    const group = [scenario, ...partners];
    for (const member of group) grouped.add(member.id);
    groups.push(group);
  }
  return groups;
}

export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
