import { execFile } from 'node:child_process';
import { readFile, symlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';
import { chartDir, HelmSandbox, KUBE_VERSION } from './helm-chart';

/**
 * The chart README's TL;DR run as written: its `helm template` block with the workspace's helm
 * (no cluster), and its `helm install` block held to the same flags, since installing needs a
 * cluster this test does not have.
 */

const execFileAsync = promisify(execFile);
const repositoryRoot = path.resolve(chartDir, '../..');

let sandbox: HelmSandbox;
let readme: string;

beforeAll(async () => {
  sandbox = await HelmSandbox.create();
  readme = await readFile(path.join(chartDir, 'README.md'), 'utf8');
  // The commands' relative paths (./helm/linkservice, test/node_modules/.bin/helm), as from the
  // repository root, in a directory whose files (receipt-signing.pem) the test may leave.
  await symlink(path.join(repositoryRoot, 'helm'), path.join(sandbox.dir, 'helm'));
  await symlink(path.join(repositoryRoot, 'test'), path.join(sandbox.dir, 'test'));
});
afterAll(async () => {
  await sandbox.remove();
});

/** The first `console` block of the README that holds `command`. */
function blockWith(command: string): string {
  const blocks = [...readme.matchAll(/```console\n([\s\S]*?)```/g)].map((match) => match[1]);
  const block = blocks.find((text) => text.includes(command));
  if (block === undefined) throw new Error(`the chart README shows no \`${command}\``);
  return block;
}

/** A command's flags after the chart path, its line continuations joined. */
function flagsAfterChart(block: string, command: string): string[] {
  const line =
    block
      .replace(/\\\n\s*/g, '')
      .split('\n')
      .find((l) => l.includes(command)) ?? '';
  return line
    .slice(line.indexOf('./helm/linkservice') + './helm/linkservice'.length)
    .trim()
    .split(/\s+/);
}

it('renders the chart with its TL;DR `helm template`, as written', async () => {
  const block = blockWith('helm template');
  const { stdout } = await execFileAsync('sh', ['-ec', block], {
    cwd: sandbox.dir,
    env: { ...sandbox.env(), PATH: process.env.PATH },
    maxBuffer: 16 * 1024 * 1024,
  });
  const kinds = parseAllDocuments(stdout).map(
    (doc) => (doc.toJS() as { kind?: string } | null)?.kind,
  );
  expect(kinds.filter((kind) => kind === 'Deployment')).toHaveLength(3);
});

it('names the kube version the chart tests render with', () => {
  expect(flagsAfterChart(blockWith('helm template'), 'helm template')).toEqual(
    expect.arrayContaining(['--kube-version', KUBE_VERSION]),
  );
});

it('installs with the flags it renders with, less --kube-version (the cluster tells helm)', () => {
  const template = flagsAfterChart(blockWith('helm template'), 'helm template');
  const at = template.indexOf('--kube-version');
  expect(at).toBeGreaterThanOrEqual(0);
  template.splice(at, 2);
  expect(flagsAfterChart(blockWith('helm install links'), 'helm install links')).toEqual(template);
});
