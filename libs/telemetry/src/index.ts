import { readFileSync } from 'node:fs';
import { IncomingMessage } from 'node:http';
import { parseEnv } from '@linkservice/config';
import type * as OtelApi from '@opentelemetry/api';
import type { Attributes, Span } from '@opentelemetry/api';
import type * as AutoInstrumentations from '@opentelemetry/auto-instrumentations-node';
import type * as OtelCore from '@opentelemetry/core';
import type * as ExpressInstrumentation from '@opentelemetry/instrumentation-express';
import type * as OtelResources from '@opentelemetry/resources';
import type * as SdkNode from '@opentelemetry/sdk-node';
import type { Telemetry as QueueTelemetry } from 'bullmq';
import type * as BullmqOtel from 'bullmq-otel';
import { z } from 'zod';
import { withoutJobResults } from './queue-telemetry';

export interface Telemetry {
  shutdown(): Promise<void>;
}

const noop: Telemetry = { shutdown: () => Promise.resolve() };

/**
 * The `db.query.text` of a Redis span: the command name alone. The instrumentation's default
 * serializer records every argument of EVAL/EVALSHA, GET, HINCRBY and more, and BullMQ adds and
 * finishes jobs through EVALSHA: job payloads (fallback URLs, deepLinkData) and results would
 * land in every trace backend. Keys say little more than the span's parent already does.
 */
function redisStatement(commandName: string): string {
  return commandName;
}

/** An install's own path under the app interface: its id is kept out of logs and traces. */
const INSTALL_PATH = /(\/sdk\/installs\/)[^/?#]+/g;

/**
 * A request URL (or path) fit for a log line or a span: an install's id replaced by
 * `:installId`. App-interface.md: no log or metric keeps an install id; the erasure receipt the
 * app holds is the only record of it. Everything else is returned as it was.
 */
export function redactUrl(url: string): string {
  return url.includes('/sdk/installs/') ? url.replace(INSTALL_PATH, '$1:installId') : url;
}

/**
 * An HTTP span's URL attributes, incoming or outgoing (`url.path`, `url.full`, `http.target`,
 * whichever the semantic conventions in use set), with redactUrl applied: they are set before
 * this hook runs, and a later value replaces the first. `path` is the request's own.
 */
function redactSpanUrls(span: Span, path: string | undefined): void {
  if (path === undefined || redactUrl(path) === path) return;
  // The SDK's spans keep their attributes readable (ReadableSpan); the API's type hides them.
  const attributes = (span as { attributes?: Record<string, unknown> }).attributes ?? {};
  for (const [name, value] of Object.entries(attributes)) {
    if (typeof value === 'string' && redactUrl(value) !== value) {
      span.setAttribute(name, redactUrl(value));
    }
  }
}

/**
 * A server span's `server.port`: the port the socket accepted on. The instrumentation takes it
 * from the Host header, which on the link host is `<sub>.<domain>` without a port (so 80).
 */
function serverPortAttributes(request: IncomingMessage): Attributes {
  const port = request.socket.localPort;
  return port === undefined ? {} : { 'server.port': port };
}

const PROBE_PATH = /^\/(healthz|readyz)(\?|$)/;

/** Every service answers its liveness and readiness probes on these two paths. */
function isProbe(url: string | undefined): boolean {
  return url !== undefined && PROBE_PATH.test(url);
}

/** Telemetry's own settings, beside the standard OTEL_* variables the SDK reads itself. */
const telemetryEnvSchema = z.object({
  /** The resource's `deployment.environment` (e.g. production, staging); NODE_ENV when unset. */
  DEPLOYMENT_ENVIRONMENT: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]{0,62}$/, 'must be a short lowercase name, e.g. production')
    .optional(),
  NODE_ENV: z.string().default('development'),
});

export interface TelemetryOptions {
  /** The service's package.json: its version becomes `service.version`. */
  packageJsonPath: string;
  /**
   * The service answers people, not API clients (the link host): their query (which may carry
   * an `ls_click` token or a campaign's data), user agent and address stay out of its spans.
   */
  endUserRequests?: boolean;
}

/**
 * What instrumentation-http records of an incoming request that the link host must not export
 * about the people who follow links. Its start hook's attributes are applied last, and an
 * undefined value is no attribute at all.
 */
const END_USER_ATTRIBUTES_DROPPED: Attributes = {
  'url.query': undefined,
  'user_agent.original': undefined,
  'client.address': undefined,
  'network.peer.address': undefined,
  'network.peer.port': undefined,
};

function packageVersion(path: string): string {
  try {
    const { version } = JSON.parse(readFileSync(path, 'utf8')) as { version?: unknown };
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Set once the SDK runs: the queue's telemetry and the span helpers do nothing before. */
let tracing: { queue: QueueTelemetry; core: typeof OtelCore; api: typeof OtelApi } | undefined;

/**
 * BullMQ's telemetry for a Queue or Worker (`telemetry:` option) while tracing is on, else
 * undefined. The producer span carries the request's context into the job (BullMQ's own
 * `telemetry.metadata` job option: W3C traceparent, nothing else), and the worker's consumer span
 * continues that trace, so one creation is one trace from the gateway to the worker's SQL.
 */
export function queueTelemetry(): QueueTelemetry | undefined {
  return tracing?.queue;
}

/**
 * Names the current incoming request's server span after its route (`GET /:alias`) and sets
 * `http.route`, for services without express (whose instrumentation does this itself).
 */
export function setHttpRoute(route: string): void {
  if (!tracing) return;
  const { core, api } = tracing;
  // The http instrumentation keeps this object in the request's context and reads it at the end.
  const metadata = core.getRPCMetadata(api.context.active());
  if (metadata?.type === core.RPCType.HTTP) metadata.route = route;
}

/**
 * `linkservice.*` attributes on the current request's server span, or else on the active span
 * (a job's consumer span in the worker); no-op when tracing is off.
 */
export function setSpanAttributes(attributes: Attributes): void {
  if (!tracing) return;
  const { core, api } = tracing;
  const active = api.context.active();
  const span = core.getRPCMetadata(active)?.span ?? api.trace.getSpan(active);
  span?.setAttributes(attributes);
}

/**
 * The active context's W3C `traceparent` while tracing is on and a span is active (a request's),
 * else undefined: what a job carries so the worker's span of one request continues its trace.
 */
export function activeTraceparent(): string | undefined {
  if (!tracing) return undefined;
  const carrier: Record<string, string> = {};
  tracing.api.propagation.inject(tracing.api.context.active(), carrier);
  return carrier.traceparent;
}

/**
 * Runs `fn` with tracing suppressed: the auto-instrumentations record nothing it starts. For
 * requests whose URL must stay out of traces (a webhook URL's query may hold its receiver's
 * token), which then get a span of their own that records only what may be shown.
 */
export function untraced<T>(fn: () => T): T {
  if (!tracing) return fn();
  const { core, api } = tracing;
  return api.context.with(core.suppressTracing(api.context.active()), fn);
}

/** A span started by startRemoteSpan; every method does nothing while tracing is off. */
export interface RemoteSpan {
  setAttributes(attributes: Attributes): void;
  /** Runs `fn` with this span active: its log lines carry the span's trace_id and span_id. */
  inContext<T>(fn: () => T): T;
  end(): void;
}

const NO_SPAN: RemoteSpan = {
  setAttributes: () => undefined,
  inContext: (fn) => fn(),
  end: () => undefined,
};

/**
 * Starts a span whose parent is `traceparent` (another process' span, such as the HTTP request a
 * job carries) and that links to the span active here (the job's consumer span), so a request's
 * trace shows its part of a job that served several requests. Without tracing, or without a
 * traceparent, a span that does nothing.
 */
export function startRemoteSpan(
  name: string,
  traceparent: string | undefined,
  attributes: Attributes,
): RemoteSpan {
  if (!tracing || traceparent === undefined) return NO_SPAN;
  const { api } = tracing;
  const here = api.trace.getSpan(api.context.active())?.spanContext();
  const parent = api.propagation.extract(api.ROOT_CONTEXT, { traceparent });
  const span = api.trace
    .getTracer('linkservice')
    .startSpan(
      name,
      { kind: api.SpanKind.INTERNAL, attributes, links: here ? [{ context: here }] : [] },
      parent,
    );
  const context = api.trace.setSpan(parent, span);
  return {
    setAttributes: (more) => {
      span.setAttributes(more);
    },
    inContext: (fn) => api.context.with(context, fn),
    end: () => {
      span.end();
    },
  };
}

/**
 * Starts the OpenTelemetry Node SDK. It must run before express, pg, ioredis or bullmq are
 * loaded, so each service imports its `instrument.ts` first. Off unless the standard OTEL_*
 * variables ask for an exporter (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_ENDPOINT...), and
 * OTEL_SDK_DISABLED=true always wins. Exporters and sampling come from those same variables.
 */
export function startTelemetry(
  serviceName: string,
  env: Record<string, string | undefined>,
  options: TelemetryOptions,
): Telemetry {
  const wanted =
    (env.OTEL_TRACES_EXPORTER !== undefined && env.OTEL_TRACES_EXPORTER !== 'none') ||
    env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined;
  if (!wanted || env.OTEL_SDK_DISABLED === 'true') return noop;
  const settings = parseEnv(telemetryEnvSchema, env);

  // Loaded only when tracing is on: the SDK and its instrumentations cost seconds of CPU and
  // tens of MB at every start. Synchronous require, so they patch modules before those load.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof SdkNode;
  const { getNodeAutoInstrumentations } =
    require('@opentelemetry/auto-instrumentations-node') as typeof AutoInstrumentations;
  const { resourceFromAttributes } = require('@opentelemetry/resources') as typeof OtelResources;
  const core = require('@opentelemetry/core') as typeof OtelCore;
  const api = require('@opentelemetry/api') as typeof OtelApi;
  const { BullMQOtel } = require('bullmq-otel') as typeof BullmqOtel;
  const { ExpressLayerType } =
    require('@opentelemetry/instrumentation-express') as typeof ExpressInstrumentation;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const version = packageVersion(options.packageJsonPath);
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? serviceName,
    // Merged under OTEL_RESOURCE_ATTRIBUTES and the detectors' attributes.
    resource: resourceFromAttributes({
      'service.version': version,
      'deployment.environment': settings.DEPLOYMENT_ENVIRONMENT ?? settings.NODE_ENV,
    }),
    instrumentations: [
      getNodeAutoInstrumentations({
        // Noisy and useless for a service: every file read would become a span.
        '@opentelemetry/instrumentation-fs': { enabled: false },
        // Never record header values: Authorization carries the secret key.
        '@opentelemetry/instrumentation-http': {
          headersToSpanAttributes: { server: { requestHeaders: [], responseHeaders: [] } },
          // Kubelet probes every few seconds per pod: a trace each would bury the real ones.
          ignoreIncomingRequestHook: (request) => isProbe(request.url),
          requestHook: (span, request) => {
            redactSpanUrls(span, request instanceof IncomingMessage ? request.url : request.path);
          },
          startIncomingSpanHook: (request) => ({
            ...serverPortAttributes(request),
            ...(options.endUserRequests && END_USER_ATTRIBUTES_DROPPED),
          }),
        },
        // Every middleware and handler was a span of its own (15 of a creation's 22), in express's
        // instrumentation and again in router's (express 5 routes through the router package).
        // Without them express's still names the server span by its route (`POST /api/v1/links`).
        '@opentelemetry/instrumentation-router': { enabled: false },
        '@opentelemetry/instrumentation-express': {
          ignoreLayersType: [
            ExpressLayerType.MIDDLEWARE,
            ExpressLayerType.REQUEST_HANDLER,
            ExpressLayerType.ROUTER,
          ],
        },
        // Statement text is parameterised; values are never attached.
        '@opentelemetry/instrumentation-pg': { enhancedDatabaseReporting: false },
        '@opentelemetry/instrumentation-ioredis': { dbStatementSerializer: redisStatement },
      }),
    ],
  });
  sdk.start();
  tracing = {
    queue: withoutJobResults(new BullMQOtel({ tracerName: 'bullmq', version })),
    core,
    api,
  };
  return { shutdown: () => sdk.shutdown() };
}
