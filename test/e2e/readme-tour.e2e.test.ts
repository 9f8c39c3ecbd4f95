import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testEnvironment } from '@linkservice/testing';
import type { TourStep } from '../support/doc-tour';
import {
  normaliseOutput,
  outputMatches,
  outputsByStep,
  tourScript,
  tourSteps,
} from '../support/doc-tour';
import type { ScratchDatabase, Stack } from '../support';
import { createMigratedDatabase, repositoryRoot, startStack } from '../support';

/**
 * The README's tour, then the walkthroughs of docs/, run as written: their `sh tour` blocks in one
 * bash session (variables carry over from one document to the next) against the compiled stack,
 * started as `pnpm start` starts it but on free ports, with a database and a Redis namespace of
 * its own. `pnpm -s linkctl` reaches them through
 * DATABASE_URL and REDIS_PREFIX, as an operator's shell would. Each step's output is compared with
 * the one the document shows.
 */

/** In reading order: the docs continue with the README tour's app, keys and link. */
const DOCUMENTS = ['README.md', 'docs/api.md', 'docs/app-side.md'];
/** The tour's ports, as `pnpm start` serves them (`localhost:8080`, `http://$HOST:8081`). */
const GATEWAY_PORT = ':8080';
const REDIRECT_PORT = ':8081';

const root = repositoryRoot();
const steps: TourStep[] = DOCUMENTS.flatMap((file) =>
  tourSteps(file, readFileSync(join(root, file), 'utf8')),
);

let database: ScratchDatabase | undefined;
let stack: Stack;
let outputs: Map<number, string>;
let stderr: string;
let exitCode: number | null;

jest.setTimeout(180_000);

beforeAll(async () => {
  const env = testEnvironment();
  const scratch = await createMigratedDatabase({
    serverUrl: env.databaseUrl,
    namePrefix: 'readme_tour',
  });
  database = scratch;
  stack = await startStack({
    databaseUrl: scratch.url,
    redisUrl: env.redisUrl,
    redisPrefix: env.redisPrefix,
    linkDomain: 'links.localhost',
  });
  const script = tourScript(steps)
    .replaceAll(GATEWAY_PORT, `:${String(stack.gateway.port)}`)
    .replaceAll(REDIRECT_PORT, `:${String(stack.redirect.port)}`);
  const run = await runBash(script, {
    PATH: process.env.PATH ?? '',
    HOME: process.env.HOME ?? tmpdir(),
    DATABASE_URL: scratch.url,
    REDIS_URL: env.redisUrl,
    REDIS_PREFIX: stack.redisPrefix,
    LINK_DOMAIN: stack.linkDomain,
  });
  outputs = outputsByStep(run.stdout);
  stderr = run.stderr;
  exitCode = run.code;
});

afterAll(async () => {
  await stack?.stop();
  await database?.drop();
});

it('finds the tour in every document', () => {
  for (const file of DOCUMENTS) expect(steps.some((step) => step.source === file)).toBe(true);
});

it('runs every step to the end', () => {
  if (exitCode !== 0) {
    throw new Error(
      `bash exited ${String(exitCode)} at step ${stepName(steps[outputs.size - 1])}\nstderr:\n${stderr}\n${stack.output()}`,
    );
  }
});

it.each(steps.map((step, index) => [stepName(step), index] as const))(
  '%s shows what the document shows',
  (_name, index) => {
    const step = steps[index];
    const output = outputs.get(index);
    if (output === undefined) throw new Error(`not reached; stderr:\n${stderr}`);
    if (step.expected.length === 0) return;
    if (!outputMatches(step.expected, output)) {
      throw new Error(
        `${step.command}\nthe document shows:\n${step.expected.join('\n')}\nit printed:\n${normaliseOutput(output)}`,
      );
    }
  },
);

function stepName(step: TourStep | undefined): string {
  if (!step) return '(none)';
  return `${step.source}:${String(step.line)} ${step.command.split('\n')[0].slice(0, 80)}`;
}

async function runBash(
  script: string,
  env: Record<string, string>,
): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const dir = await mkdtemp(join(tmpdir(), 'readme-tour-'));
  const file = join(dir, 'tour.sh');
  await writeFile(file, script);
  try {
    return await new Promise((resolve, reject) => {
      const child = spawn('bash', [file], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let errors = '';
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString();
      });
      child.stderr.on('data', (chunk: Buffer) => {
        errors += chunk.toString();
      });
      child.on('error', reject);
      child.on('close', (code) => {
        resolve({ stdout, stderr: errors, code });
      });
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
