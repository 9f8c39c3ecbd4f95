import { writeTierReport } from '../support/tier-report';
import type { CreationAudit } from '../faults/audit';

/** One failover's figures, a column of the tier's table. */
export interface FailoverFigures {
  name: string;
  failover: {
    killedPort: number;
    promotedPort: number;
    promotionMs: number;
    killedShards: number;
    /** Whether the killed master held the creation queue's slot. */
    queue: boolean;
    /** Whether it held the load's app's hourly creation counter. */
    counter: boolean;
  };
  requests: number;
  status: Record<'2xx' | '3xx' | '4xx' | '5xx' | 'none', number>;
  errorsOutsideWindow: number;
  /** Failed requests by kind and status, and when they started relative to the kill. */
  errors: string;
  /** Answers with a status no rule allows (a 500, a 503 without Retry-After). */
  malformed: string[];
  redirectsOnKilledShards: number;
  /** How each service exited on the SIGTERM after the load. */
  exits: string;
  worst: string;
  clicks: { answered: number; counted: number; lost: number; overCounted: number; bound: number };
  creations: CreationAudit;
}

const scenarios: FailoverFigures[] = [];

export function recordFailover(figures: FailoverFigures): void {
  scenarios.push(figures);
}

/** Figure name, its value per scenario, and the bound the docs state. */
const ROWS: [string, (f: FailoverFigures) => string | number, string][] = [
  [
    'killed master',
    (f) =>
      `:${f.failover.killedPort}: ${f.failover.queue ? 'creation queue, ' : ''}${f.failover.counter ? "the app's creation counter, " : ''}${f.failover.killedShards}/16 shards`,
    '',
  ],
  ['replica serving after', (f) => `${f.failover.promotionMs} ms`, ''],
  ['requests sent', (f) => f.requests, ''],
  [
    'answered 2xx / 3xx / 4xx',
    (f) => `${f.status['2xx']} / ${f.status['3xx']} / ${f.status['4xx']}`,
    '',
  ],
  [
    'errors: 5xx / no answer',
    (f) => `${f.status['5xx']} / ${f.status.none}`,
    'inside the failover window',
  ],
  ['errors outside the window', (f) => f.errorsOutsideWindow, '0'],
  ['malformed answers', (f) => f.malformed.length, '0 (503 with Retry-After)'],
  ['worst answer time', (f) => f.worst, ''],
  ['clicks answered (302)', (f) => f.clicks.answered, ''],
  ["redirects on the killed master's shards", (f) => f.redirectsOnKilledShards, ''],
  ['clicks in link_clicks', (f) => f.clicks.counted, ''],
  [
    'clicks lost',
    (f) => `${f.clicks.lost} (bound ${f.clicks.bound})`,
    "≤ one flush interval's on the killed shards",
  ],
  ['clicks over-counted', (f) => f.clicks.overCounted, '0'],
  ['201s missing in Postgres', (f) => f.creations.lost, '0'],
  ['links duplicated', (f) => f.creations.duplicated, '0'],
  ['refused (503) yet created', (f) => f.creations.createdDespiteRefusal, 'reported'],
  ['unanswered, created', (f) => f.creations.createdUnanswered, 'reported'],
];

export function renderFailovers(durationMs: number): string {
  const line = (values: (string | number)[]) => `| ${values.join(' | ')} |`;
  return [
    `Redis Cluster failovers under load, ${new Date().toISOString()}, tier ${(durationMs / 1000).toFixed(0)} s in all.`,
    '',
    line(['figure', ...scenarios.map((f) => f.name), 'bound']),
    line(['---', ...scenarios.map(() => '---'), '---']),
    ...ROWS.map(([name, value, bound]) => line([name, ...scenarios.map(value), bound])),
    '',
    ...scenarios.flatMap((f) => [
      `- ${f.name}: errors ${f.errors}; services exited (SIGTERM after the load): ${f.exits}`,
      ...f.malformed.slice(0, 10).map((m) => `  - malformed: ${m}`),
      ...f.creations.details.slice(0, 10).map((d) => `  - ${d}`),
    ]),
    '',
  ].join('\n');
}

/** Prints the table and writes it to test/cluster/results/last-run.md (git-ignored). */
export function writeClusterReport(durationMs: number): string {
  return writeTierReport(__dirname, renderFailovers(durationMs));
}
