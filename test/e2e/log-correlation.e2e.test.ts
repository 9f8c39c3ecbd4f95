import { eventually } from '@linkservice/testing';
import { sendApiRequest, useRunStack } from '../support/stack';
import { createTenant } from '../support/tenants';

/**
 * With tracing on, the compiled services' pino lines carry the active span's trace_id and
 * span_id (the OTel pino instrumentation that startTelemetry's auto-instrumentations enable; it
 * patches pino because instrument.ts starts telemetry before the logger loads). The exporter
 * points at a closed port: what is sent does not matter here, only that spans exist.
 */

jest.setTimeout(60_000);

const suite = useRunStack({
  services: ['gateway', 'worker'],
  logLevel: 'info',
  env: {
    OTEL_SDK_DISABLED: 'false',
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9',
    OTEL_METRICS_EXPORTER: 'none',
    OTEL_LOGS_EXPORTER: 'none',
  },
});

function jsonLines(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

it("puts trace_id and span_id on a creation's request line, beside its job id", async () => {
  const tenant = await createTenant(suite.postgres.db);
  const res = await sendApiRequest(`${suite.stack.apiUrl}/links`, {
    method: 'POST',
    key: tenant.live.secret,
    body: { webFallbackUrl: 'https://correlation.example' },
    headers: { 'x-request-id': 'correlated-1' },
  });
  expect(res.status).toBe(201);

  const line = await eventually(
    () => jsonLines(suite.stack.gateway.output()).find((l) => l.reqId === 'correlated-1'),
    { what: 'the request line' },
  );
  expect(line).toMatchObject({
    trace_id: expect.stringMatching(/^[0-9a-f]{32}$/),
    span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
    jobId: expect.stringMatching(/^crt_/),
  });

  const jobLine = await eventually(
    () =>
      jsonLines(suite.stack.worker.output()).find(
        (l) => l.msg === 'creation job finished' && l.jobId === line.jobId,
      ),
    { what: 'the job line' },
  );
  // The same request and the same trace: the job runs in the consumer span of that trace.
  expect(jobLine).toMatchObject({
    reqId: 'correlated-1',
    trace_id: line.trace_id,
    appId: tenant.appId,
    entries: 1,
    created: 1,
    failed: 0,
  });
});
