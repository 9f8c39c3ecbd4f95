import { IncomingMessage } from 'node:http';
import type { Span } from '@opentelemetry/api';
import type * as AutoInstrumentations from '@opentelemetry/auto-instrumentations-node';
import type * as SdkNode from '@opentelemetry/sdk-node';

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

const PROBE_PATH = /^\/(healthz|readyz)(\?|$)/;

/** Every service answers its liveness and readiness probes on these two paths. */
function isProbe(url: string | undefined): boolean {
  return url !== undefined && PROBE_PATH.test(url);
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
): Telemetry {
  const wanted =
    (env.OTEL_TRACES_EXPORTER !== undefined && env.OTEL_TRACES_EXPORTER !== 'none') ||
    env.OTEL_EXPORTER_OTLP_ENDPOINT !== undefined ||
    env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT !== undefined;
  if (!wanted || env.OTEL_SDK_DISABLED === 'true') return noop;

  // Loaded only when tracing is on: the SDK and its instrumentations cost seconds of CPU and
  // tens of MB at every start. Synchronous require, so they patch modules before those load.
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { NodeSDK } = require('@opentelemetry/sdk-node') as typeof SdkNode;
  const { getNodeAutoInstrumentations } =
    require('@opentelemetry/auto-instrumentations-node') as typeof AutoInstrumentations;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ?? serviceName,
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
        },
        // Statement text is parameterised; values are never attached.
        '@opentelemetry/instrumentation-pg': { enhancedDatabaseReporting: false },
        '@opentelemetry/instrumentation-ioredis': { dbStatementSerializer: redisStatement },
      }),
    ],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}
