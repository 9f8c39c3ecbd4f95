import { readFileSync } from 'node:fs';

/**
 * `pnpm bench:profile <file.cpuprofile> [--top N]`: what a V8 CPU profile (`node --cpu-prof`,
 * BENCH_CPU_PROFILE=true) spent its time on, as text: the top functions by self time and by
 * inclusive time (each function counted once per sampled stack, so recursion does not count
 * twice), and the same by package (a node_modules package, a workspace lib or service, node's
 * own internals, or V8's pseudo-frames such as `(garbage collector)`). `(idle)` is left out of
 * every share: the shares are of the time the process was busy.
 */

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface Row {
  name: string;
  selfMs: number;
  totalMs: number;
}

export interface ProfileSummary {
  /** Sampled time the process was not idle, ms. */
  busyMs: number;
  idleMs: number;
  functions: Row[];
  packages: Row[];
}

/**
 * The package a script belongs to: the innermost node_modules package (scoped names kept),
 * `@linkservice/<lib>` or `<service>` for the workspace, `node:internal` for node's own code.
 */
export function packageOf(frame: CallFrame): string {
  const url = frame.url;
  if (url === '') return frame.functionName.startsWith('(') ? frame.functionName : '(native)';
  if (url.startsWith('node:')) return 'node:internal';
  const modules = url.lastIndexOf('/node_modules/');
  if (modules !== -1) {
    const parts = url.slice(modules + '/node_modules/'.length).split('/');
    return parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1] ?? ''}` : (parts[0] ?? url);
  }
  const workspace = /\/(libs|services|test)\/([^/]+)\//.exec(url);
  if (workspace) {
    return workspace[1] === 'libs'
      ? `@linkservice/${workspace[2]}`
      : `${workspace[1]}/${workspace[2]}`;
  }
  return url;
}

/** `name file:line`, the file relative to the nearest node_modules or workspace folder. */
function functionOf(frame: CallFrame): string {
  const name = frame.functionName === '' ? '(anonymous)' : frame.functionName;
  if (frame.url === '') return name;
  const short = frame.url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\/(?!.*\/node_modules\/)/, '')
    .replace(/^.*\/(libs|services|test)\//, '$1/');
  return `${name} ${short}:${frame.lineNumber + 1}`;
}

/**
 * Where the time under functions matching `pattern` (a substring of `name file:line`, e.g.
 * `writeUtf8String`, `zod/v4`) came from: each such sample is charged to the nearest frame
 * above the match that neither matches nor is node's or native (the code that called into it).
 */
export function callersOf(profile: CpuProfile, pattern: string): Row[] {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
  const deltas = profile.timeDeltas ?? [];
  const callers = new Map<string, Row>();
  for (const [index, sampled] of (profile.samples ?? []).entries()) {
    const ms = Math.max(deltas[index] ?? 0, 0) / 1000;
    let matched = false;
    for (let node = byId.get(sampled); node;) {
      const name = functionOf(node.callFrame);
      if (!matched) matched = name.includes(pattern);
      else if (!name.includes(pattern)) {
        const pkg = packageOf(node.callFrame);
        if (pkg !== 'node:internal' && !pkg.startsWith('(')) {
          const caller = `${name} [${pkg}]`;
          const row = callers.get(caller) ?? { name: caller, selfMs: 0, totalMs: 0 };
          row.selfMs += ms;
          row.totalMs += ms;
          callers.set(caller, row);
          break;
        }
      }
      const parent = parentOf.get(node.id);
      node = parent === undefined ? undefined : byId.get(parent);
    }
  }
  return [...callers.values()];
}

/**
 * The profile without its first `seconds` (e.g. the process' start: loading modules, connecting),
 * so what is left is the load a bench scenario put on it.
 */
export function skipFirst(profile: CpuProfile, seconds: number): CpuProfile {
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let elapsed = 0;
  const deltas = profile.timeDeltas ?? [];
  for (const [index, sample] of (profile.samples ?? []).entries()) {
    const delta = deltas[index] ?? 0;
    elapsed += delta;
    if (elapsed < seconds * 1e6) continue;
    samples.push(sample);
    timeDeltas.push(delta);
  }
  return { ...profile, samples, timeDeltas };
}

export function summarise(profile: CpuProfile): ProfileSummary {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) {
    for (const child of node.children ?? []) parentOf.set(child, node.id);
  }
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const functions = new Map<string, Row>();
  const packages = new Map<string, Row>();
  const row = (table: Map<string, Row>, name: string): Row => {
    let found = table.get(name);
    if (!found) {
      found = { name, selfMs: 0, totalMs: 0 };
      table.set(name, found);
    }
    return found;
  };
  let busyMs = 0;
  let idleMs = 0;
  for (const [index, sampled] of samples.entries()) {
    const ms = Math.max(deltas[index] ?? 0, 0) / 1000;
    const leaf = byId.get(sampled);
    if (!leaf) continue;
    if (leaf.callFrame.functionName === '(idle)') {
      idleMs += ms;
      continue;
    }
    busyMs += ms;
    row(functions, functionOf(leaf.callFrame)).selfMs += ms;
    row(packages, packageOf(leaf.callFrame)).selfMs += ms;
    const seenFunctions = new Set<string>();
    const seenPackages = new Set<string>();
    for (let node: ProfileNode | undefined = leaf; node;) {
      const fn = functionOf(node.callFrame);
      const pkg = packageOf(node.callFrame);
      if (!seenFunctions.has(fn) && fn !== '(root)') {
        seenFunctions.add(fn);
        row(functions, fn).totalMs += ms;
      }
      if (!seenPackages.has(pkg) && pkg !== '(root)') {
        seenPackages.add(pkg);
        row(packages, pkg).totalMs += ms;
      }
      const parent = parentOf.get(node.id);
      node = parent === undefined ? undefined : byId.get(parent);
    }
  }
  return { busyMs, idleMs, functions: [...functions.values()], packages: [...packages.values()] };
}

function table(
  title: string,
  rows: Row[],
  busyMs: number,
  key: 'selfMs' | 'totalMs',
  top: number,
): string {
  const sorted = [...rows].sort((a, b) => b[key] - a[key]).slice(0, top);
  const pct = (ms: number): string => `${((100 * ms) / (busyMs || 1)).toFixed(1)}%`.padStart(6);
  const ms = (value: number): string => value.toFixed(0).padStart(8);
  return [
    title,
    `${'self ms'.padStart(8)} ${'self'.padStart(6)} ${'total ms'.padStart(8)} ${'total'.padStart(6)}  name`,
    ...sorted.map(
      (r) => `${ms(r.selfMs)} ${pct(r.selfMs)} ${ms(r.totalMs)} ${pct(r.totalMs)}  ${r.name}`,
    ),
  ].join('\n');
}

export function formatSummary(summary: ProfileSummary, top = 30): string {
  const { busyMs, idleMs } = summary;
  return [
    `busy ${busyMs.toFixed(0)} ms, idle ${idleMs.toFixed(0)} ms (shares are of busy time)`,
    '',
    table('packages by self time', summary.packages, busyMs, 'selfMs', top),
    '',
    table('packages by inclusive time', summary.packages, busyMs, 'totalMs', top),
    '',
    table('functions by self time', summary.functions, busyMs, 'selfMs', top),
    '',
    table('functions by inclusive time', summary.functions, busyMs, 'totalMs', top),
    '',
  ].join('\n');
}

function main(args: string[]): void {
  const files: string[] = [];
  let top = 30;
  let callers: string | undefined;
  let skip = 0;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '--top') top = Number(args[++i]);
    else if (arg === '--callers') callers = args[++i];
    else if (arg === '--skip') skip = Number(args[++i]);
    else files.push(arg);
  }
  if (files.length === 0 || !Number.isInteger(top) || top < 1) {
    process.stderr.write(
      'usage: pnpm bench:profile <file.cpuprofile>... [--top N] [--skip SECONDS] [--callers TEXT]\n',
    );
    process.exitCode = 2;
    return;
  }
  for (const file of files) {
    const profile = skipFirst(JSON.parse(readFileSync(file, 'utf8')) as CpuProfile, skip);
    const summary = summarise(profile);
    if (callers === undefined) {
      process.stdout.write(`${file}\n${formatSummary(summary, top)}\n`);
      continue;
    }
    const rows = callersOf(profile, callers);
    process.stdout.write(
      `${file}\n${table(`callers of ${callers}`, rows, summary.busyMs, 'selfMs', top)}\n`,
    );
  }
}

if (require.main === module) main(process.argv.slice(2));
