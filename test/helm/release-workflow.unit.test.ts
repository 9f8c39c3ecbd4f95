import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';

/**
 * The release workflow pushes the image the chart deploys by default: the same registry and
 * repository, so `helm install` with default values pulls what a release built.
 */

const root = path.resolve(__dirname, '../..');

interface Step {
  id?: string;
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}

interface Workflow {
  on: { push?: { tags?: string[] }; workflow_dispatch?: unknown };
  permissions: Record<string, string>;
  env: Record<string, string>;
  jobs: Record<string, { steps: Step[] }>;
}

async function readYaml<T>(file: string): Promise<T> {
  return parse(await readFile(path.join(root, file), 'utf8')) as T;
}

let workflow: Workflow;
let steps: Step[];

beforeAll(async () => {
  workflow = await readYaml<Workflow>('.github/workflows/release.yml');
  steps = Object.values(workflow.jobs).flatMap((job) => job.steps);
});

function step(action: string): Step {
  const found = steps.filter((s) => s.uses?.split('@')[0] === action);
  expect(found).toHaveLength(1);
  return found[0];
}

describe('release workflow', () => {
  it('runs on v* tags and by hand, allowed to push packages', () => {
    expect(workflow.on.push?.tags).toEqual(['v*']);
    expect(workflow.on).toHaveProperty('workflow_dispatch');
    expect(workflow.permissions).toMatchObject({ contents: 'read', packages: 'write' });
  });

  it('builds with Node 24 and the pnpm of packageManager from the lockfile', async () => {
    expect(step('actions/setup-node').with).toMatchObject({ 'node-version': 24 });
    // No version of its own: pnpm/action-setup takes packageManager, so the two cannot differ.
    expect(step('pnpm/action-setup').with?.version).toBeUndefined();
    const { packageManager } = JSON.parse(
      await readFile(path.join(root, 'package.json'), 'utf8'),
    ) as { packageManager: string };
    expect(packageManager).toMatch(/^pnpm@10\./);
    const runs = steps.map((s) => s.run?.trim());
    expect(runs).toEqual(
      expect.arrayContaining(['pnpm install --frozen-lockfile', 'pnpm lint', 'pnpm build']),
    );
  });

  it("pushes the image from deploy/Dockerfile to the chart's default image repository", async () => {
    const values = await readYaml<{ image: { registry: string; repository: string } }>(
      'helm/linkservice/values.yaml',
    );
    expect(workflow.env.IMAGE).toBe(`${values.image.registry}/${values.image.repository}`);

    const build = step('docker/build-push-action').with!;
    expect(build.push).toBe(true);
    expect(build.file).toBe('deploy/Dockerfile');
    await access(path.join(root, String(build.file)));
    const tags = String(build.tags).trim().split('\n');
    expect(tags.length).toBeGreaterThan(0);
    for (const tag of tags) expect(tag.trim()).toMatch(/^\$\{\{ env\.IMAGE \}\}:\$\{\{ .+ \}\}$/);
    expect(step('docker/login-action').with).toMatchObject({
      registry: values.image.registry,
      password: '${{ secrets.GITHUB_TOKEN }}',
    });
  });

  it('tags releases with the version of the tag, which must be the chart appVersion', () => {
    const version = steps.find((s) => s.id === 'version')!;
    expect(version.run).toContain('helm/linkservice/Chart.yaml');
    expect(version.run).toContain('"$version" != "$app_version"');
    expect(String(step('docker/build-push-action').with!.tags)).toContain(
      'steps.version.outputs.tag',
    );
  });

  it('pushes the chart beside the image', () => {
    const ownerOf = (reference: string) => reference.split('/').slice(0, 2).join('/');
    expect(ownerOf(workflow.env.CHART_REPOSITORY.replace(/^oci:\/\//, ''))).toBe(
      ownerOf(workflow.env.IMAGE),
    );
    const chart = steps.find((s) => s.run?.includes('helm push'));
    expect(chart?.run).toContain('"$CHART_REPOSITORY"');
  });
});
