import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { runCli } from '../cli';

/** The compiled CLI, exactly as `pnpm linkctl` runs it. */
export const LINKCTL_MAIN = path.resolve(__dirname, '../../dist/main.js');
/** The repository root, where `pnpm linkctl` is defined. */
export const REPO_ROOT = path.resolve(__dirname, '../../../..');

export interface LinkctlRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function assertLinkctlBuilt(): void {
  if (!existsSync(LINKCTL_MAIN)) {
    throw new Error(`${LINKCTL_MAIN} is missing: run pnpm exec tsc -b services/linkctl first`);
  }
}

/**
 * Runs linkctl in this process, as `node dist/main.js <args>` would with the test environment
 * plus `env`: for every test whose subject is a command, not the process boundary.
 */
export async function linkctlInProcess(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<LinkctlRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCli(args, {
    env: { ...process.env, ...env },
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
  });
  return { code, stdout, stderr };
}

/** Runs `node dist/main.js <args>` with the test environment plus `env`, and collects its output. */
export function runLinkctl(
  args: string[],
  env: Record<string, string | undefined> = {},
): Promise<LinkctlRun> {
  return runProcess(process.execPath, [LINKCTL_MAIN, ...args], { env });
}

/** Runs any command to its end with the test environment plus `env`. */
export function runProcess(
  command: string,
  args: string[],
  { env = {}, cwd }: { env?: Record<string, string | undefined>; cwd?: string } = {},
): Promise<LinkctlRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      resolve({ code, stdout, stderr });
    });
  });
}

/** The single JSON document a successful `--json` run printed; fails the test on anything else. */
export function jsonOf(run: LinkctlRun): unknown {
  if (run.code !== 0) throw new Error(`linkctl exited ${String(run.code)}: ${run.stderr}`);
  if (run.stderr !== '') throw new Error(`linkctl wrote to stderr: ${run.stderr}`);
  return JSON.parse(run.stdout);
}
