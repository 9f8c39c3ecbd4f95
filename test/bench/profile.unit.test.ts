import { callersOf, formatSummary, packageOf, skipFirst, summarise } from './profile';
import type { CpuProfile } from './profile';

const frame = (functionName: string, url = '', lineNumber = 0) => ({
  functionName,
  url,
  lineNumber,
  columnNumber: 0,
});

const APP = 'file:///repo/services/gateway/dist/app.js';
const PG = 'file:///repo/node_modules/.pnpm/pg@8/node_modules/pg/lib/client.js';

/**
 * root -> handle (gateway) -> query (pg) -> writev (native); handle -> handle (recursion);
 * root -> (idle). Each sample 1 ms.
 */
const PROFILE: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)'), children: [2, 5] },
    { id: 2, callFrame: frame('handle', APP, 9), children: [3, 6] },
    { id: 3, callFrame: frame('query', PG, 99), children: [4] },
    { id: 4, callFrame: frame('writev') },
    { id: 5, callFrame: frame('(idle)') },
    { id: 6, callFrame: frame('handle', APP, 9) },
  ],
  startTime: 0,
  endTime: 6000,
  samples: [4, 4, 3, 6, 5, 2],
  timeDeltas: [1000, 1000, 1000, 1000, 1000, 1000],
};

describe('packageOf', () => {
  it('names node_modules packages, scoped ones too, the workspace, node and V8 frames', () => {
    expect(packageOf(frame('f', PG))).toBe('pg');
    expect(packageOf(frame('f', 'file:///r/node_modules/@opentelemetry/api/build/x.js'))).toBe(
      '@opentelemetry/api',
    );
    expect(packageOf(frame('f', 'file:///r/libs/db/dist/pool.js'))).toBe('@linkservice/db');
    expect(packageOf(frame('f', APP))).toBe('services/gateway');
    expect(packageOf(frame('f', 'node:internal/streams/writable'))).toBe('node:internal');
    expect(packageOf(frame('(garbage collector)'))).toBe('(garbage collector)');
    expect(packageOf(frame('writev'))).toBe('(native)');
  });
});

describe('summarise', () => {
  it('gives self and inclusive time, counts a recursive function once, leaves idle out', () => {
    const summary = summarise(PROFILE);
    expect(summary.busyMs).toBe(5);
    expect(summary.idleMs).toBe(1);
    const fn = (name: string) => summary.functions.find((r) => r.name.startsWith(name));
    expect(fn('writev')).toMatchObject({ selfMs: 2, totalMs: 2 });
    expect(fn('query')).toMatchObject({ selfMs: 1, totalMs: 3 });
    expect(fn('handle')).toMatchObject({ selfMs: 2, totalMs: 5 });
    expect(fn('handle')?.name).toBe('handle services/gateway/dist/app.js:10');
    const pkg = (name: string) => summary.packages.find((r) => r.name === name);
    expect(pkg('pg')).toMatchObject({ selfMs: 1, totalMs: 3 });
    expect(pkg('services/gateway')).toMatchObject({ selfMs: 2, totalMs: 5 });
    expect(formatSummary(summary, 3)).toContain('busy 5 ms, idle 1 ms');
  });

  it('skips the first seconds of a profile', () => {
    expect(summarise(skipFirst(PROFILE, 0.003)).busyMs).toBe(3);
  });
});

describe('callersOf', () => {
  it('charges time under a function to the nearest library or service frame above it', () => {
    expect(callersOf(PROFILE, 'writev')).toEqual([
      { name: 'query pg/lib/client.js:100 [pg]', selfMs: 2, totalMs: 2 },
    ]);
  });
});
