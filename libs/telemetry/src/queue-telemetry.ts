import type { Span as QueueSpan, Telemetry as QueueTelemetry } from 'bullmq';

/** BullMQ's event attribute holding a job's whole return value. */
const JOB_RESULT_ATTRIBUTE = 'bullmq.job.result';

/**
 * BullMQ's telemetry minus the `job completed` event's copy of the return value: a creation's
 * result holds every link, deepLinkData and fallback URLs included, which must not reach a trace.
 */
export function withoutJobResults(inner: QueueTelemetry): QueueTelemetry {
  return {
    contextManager: inner.contextManager,
    tracer: {
      startSpan(name, options, context): QueueSpan {
        const span = inner.tracer.startSpan(name, options, context);
        return {
          setSpanOnContext: (ctx: unknown): unknown => span.setSpanOnContext(ctx) as unknown,
          setAttribute: (key, value) => {
            span.setAttribute(key, value);
          },
          setAttributes: (attributes) => {
            span.setAttributes(attributes);
          },
          addEvent: (event, attributes) => {
            const kept = Object.entries(attributes ?? {}).filter(
              ([key]) => key !== JOB_RESULT_ATTRIBUTE,
            );
            span.addEvent(event, Object.fromEntries(kept));
          },
          recordException: (exception, time) => {
            span.recordException(exception, time);
          },
          end: () => {
            span.end();
          },
        };
      },
    },
  };
}
