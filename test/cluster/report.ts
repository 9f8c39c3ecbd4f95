import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CreationAudit } from '../faults/audit';

/** The failover's figures, as the tier prints them. */
export interface FailoverFigures {
  durationMs: number;
  failover: { killedPort: number; promotedPort: number; promotionMs: number; killedShards: number };
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

export function renderFailover(f: FailoverFigures): string {
  const line = (values: (string | number)[]) => `| ${values.join(' | ')} |`;
  const rows: [string, string | number, string][] = [
    ['requests sent', f.requests, 'mixed: redirects, creations, batches, reads'],
    [
      'answered 2xx / 3xx / 4xx',
      `${f.status['2xx']} / ${f.status['3xx']} / ${f.status['4xx']}`,
      '',
    ],
    [
      'errors: 5xx / no answer',
      `${f.status['5xx']} / ${f.status.none}`,
      'only inside the failover window',
    ],
    ['errors outside the window', f.errorsOutsideWindow, '0'],
    ['malformed answers', f.malformed.length, '0 (errors are 503 with Retry-After)'],
    ['worst answer time', f.worst, ''],
    [
      'clicks answered (302)',
      f.clicks.answered,
      `${f.redirectsOnKilledShards} redirects on the killed master's shards`,
    ],
    ['clicks in link_clicks', f.clicks.counted, ''],
    [
      'clicks lost',
      f.clicks.lost,
      `≤ ${f.clicks.bound} (one flush interval on the killed master's shards)`,
    ],
    ['clicks over-counted', f.clicks.overCounted, '0'],
    ['201s missing in Postgres', f.creations.lost, '0'],
    ['links duplicated', f.creations.duplicated, '0'],
    ['refused (503) yet created', f.creations.createdDespiteRefusal, 'reported'],
    ['unanswered, created', f.creations.createdUnanswered, 'reported'],
  ];
  return [
    `Redis Cluster failover, ${new Date().toISOString()}, tier ${(f.durationMs / 1000).toFixed(0)} s in all.`,
    `Killed master :${f.failover.killedPort} (creation queue and ${f.failover.killedShards} of 16 link host shards); replica :${f.failover.promotedPort} serving ${f.failover.promotionMs} ms after the kill.`,
    '',
    line(['figure', 'value', 'bound']),
    line(['---', '---', '---']),
    ...rows.map(line),
    '',
    `- errors: ${f.errors}`,
    `- services exited (SIGTERM after the load): ${f.exits}`,
    ...f.malformed.slice(0, 10).map((m) => `- malformed: ${m}`),
    ...f.creations.details.slice(0, 10).map((d) => `- ${d}`),
    '',
  ].join('\n');
}

/** Prints the table and writes it to test/cluster/results/last-run.md (git-ignored). */
export function writeClusterReport(figures: FailoverFigures): string {
  const table = renderFailover(figures);
  const dir = join(__dirname, 'results');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'last-run.md');
  writeFileSync(file, table);
  process.stdout.write(`\n${table}\nwritten to ${file}\n`);
  return file;
}
