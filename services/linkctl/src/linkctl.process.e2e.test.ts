import { randomBytes } from 'node:crypto';
import { TEST_LINK_DOMAIN as LINK_DOMAIN, expectOneLineFailure } from './testing/linkctl-suite';
import type { LinkctlRun } from './testing/run-linkctl';
import {
  REPO_ROOT,
  assertLinkctlBuilt,
  jsonOf,
  runLinkctl,
  runProcess,
} from './testing/run-linkctl';

// What only the compiled CLI as a process shows: its exit code, stdout holding exactly the one
// JSON document, help on stdout, and the root `pnpm linkctl` script. What each command does is
// tested in process (*.cli.integration.test.ts), where the same runCli runs.

beforeAll(() => {
  assertLinkctlBuilt();
});

const linkctl = (...args: string[]) => runLinkctl(args, { LINK_DOMAIN });

/** Exactly one line on stdout: the JSON document, and nothing else. */
function expectOneJsonDocument(run: LinkctlRun): unknown {
  expect(run.stdout.endsWith('\n')).toBe(true);
  expect(run.stdout.trimEnd().split('\n')).toHaveLength(1);
  return jsonOf(run);
}

describe('node services/linkctl/dist/main.js', () => {
  it('prints one JSON document on stdout and exits 0', async () => {
    const name = `Process ${randomBytes(3).toString('hex')}`;
    const doc = expectOneJsonDocument(await linkctl('app', 'create', '--name', name, '--json'));
    expect(doc).toMatchObject({ app: { name, linkAllowance: null } });
  });

  it('exits 1 on a refusal, 2 on a wrong command line, 78 on a bad environment', async () => {
    const [refused, usage, config] = await Promise.all([
      linkctl('key', 'list', '--app', 'app_nope', '--json'),
      linkctl('key', 'create', '--json'),
      runLinkctl(['key', 'list', '--app', 'app_x', '--json'], { DATABASE_URL: 'mysql://db/x' }),
    ]);
    expectOneLineFailure(refused, 1, /no app with id "app_nope"/);
    expectOneLineFailure(usage, 2, /required option '--app <appId>' not specified/);
    expectOneLineFailure(config, 78, /invalid configuration: DATABASE_URL: /);
  });

  it('prints help on stdout and exits 0', async () => {
    const run = await linkctl('--help');
    expect(run).toMatchObject({ code: 0, stderr: '' });
    expect(run.stdout).toMatch(/^Usage: linkctl \[options\] \[command\]\n/);
  });
});

describe('pnpm -s linkctl (the root script, as the READMEs tell operators to run it)', () => {
  // The script compiles linkctl first (tsc -b, up to date here: its bound is pnpm's and tsc's
  // start-up on a loaded machine, not anything linkctl does).
  it('leaves exactly the JSON document on stdout', async () => {
    const run = await runProcess(
      'pnpm',
      ['-s', 'linkctl', 'app', 'create', '--name', 'Via pnpm', '--json'],
      { cwd: REPO_ROOT, env: { LINK_DOMAIN } },
    );
    const { app } = expectOneJsonDocument(run) as { app: { name: string } };
    expect(app.name).toBe('Via pnpm');
    expect(run.stdout).toBe(`${JSON.stringify({ app })}\n`);
  }, 120_000);
});
