import type { Span, Telemetry } from 'bullmq';
import { queueTelemetry, setHttpRoute, setSpanAttributes } from './index';
import { withoutJobResults } from './queue-telemetry';

function recordingTelemetry(events: unknown[]): Telemetry {
  const span: Span = {
    setSpanOnContext: (ctx: unknown) => ctx,
    setAttribute: () => undefined,
    setAttributes: () => undefined,
    addEvent: (name, attributes) => events.push({ name, attributes }),
    recordException: () => undefined,
    end: () => undefined,
  };
  return {
    tracer: { startSpan: () => span },
    contextManager: {
      with: (_ctx, fn) => fn() as unknown,
      active: () => ({}),
      getMetadata: () => '',
      fromMetadata: (ctx: unknown) => ctx,
    },
  } as Telemetry;
}

describe('BullMQ telemetry', () => {
  it("drops the job's return value from its events and keeps the rest", () => {
    const events: unknown[] = [];
    const telemetry = withoutJobResults(recordingTelemetry(events));
    const span = telemetry.tracer.startSpan('process link-creations');
    span.addEvent('job completed', {
      'bullmq.job.result': '{"deepLinkData":{"secret":1}}',
      'bullmq.job.name': 'create-links',
    });
    span.addEvent('job failed');
    expect(events).toEqual([
      { name: 'job completed', attributes: { 'bullmq.job.name': 'create-links' } },
      { name: 'job failed', attributes: {} },
    ]);
  });
});

describe('tracing off', () => {
  it('gives queues no telemetry, and the span helpers do nothing', () => {
    expect(queueTelemetry()).toBeUndefined();
    expect(() => {
      setSpanAttributes({ 'linkservice.app_id': 'app_1' });
      setHttpRoute('/:alias');
    }).not.toThrow();
  });
});
