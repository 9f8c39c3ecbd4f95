import { writeTierReport } from '../support/tier-report';

/** One fault's figures, as the note's table shows them. */
export interface FaultRow {
  fault: string;
  bound: string;
  /** Longest answer time of any request during the scenario, and of which kind. */
  worst: string;
  lost: string;
  duplicated: string;
  overCounted: string;
  /**
   * Clicks answered (302) / what clickCount gained / what the analytics rollups hold, and
   * whether the rollups are consistent (test/support/analytics-consistency.ts).
   */
  analytics: string;
  /** Requests, 503s, violations: what a reader needs to judge the row. */
  notes: string;
  passed: boolean;
}

const rows: FaultRow[] = [];

export function recordRow(row: FaultRow): void {
  rows.push(row);
}

const HEADER = [
  'fault',
  'bound',
  'worst answer time',
  'lost',
  'duplicated',
  'over-counted',
  'clicks: answered / clickCount / analytics',
];

/** The table in Markdown, with a line of notes per fault under it. */
export function renderTable(durationMs: number): string {
  const cells = rows.map((row) => [
    `${row.passed ? '' : '✗ '}${row.fault}`,
    row.bound,
    row.worst,
    row.lost,
    row.duplicated,
    row.overCounted,
    row.analytics,
  ]);
  const line = (values: string[]) => `| ${values.join(' | ')} |`;
  return [
    `Fault suite, ${new Date().toISOString()}, ${(durationMs / 1000).toFixed(0)} s in all (✗: the scenario failed).`,
    '',
    line(HEADER),
    line(HEADER.map(() => '---')),
    ...cells.map(line),
    '',
    ...rows.map((row) => `- ${row.fault}: ${row.notes}`),
    '',
  ].join('\n');
}

/** Prints the table and writes it to test/faults/results/last-run.md (git-ignored). */
export function writeReport(durationMs: number): string {
  return writeTierReport(__dirname, renderTable(durationMs));
}
