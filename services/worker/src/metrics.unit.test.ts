import { createMetricsRegistry } from '@linkservice/metrics';
import type { Job } from 'bullmq';
import { UnrecoverableError } from 'bullmq';
import type { CreateLinksJobResult } from '@linkservice/creation';
import { measuredProcessor, outcomeOf, QUEUE_COUNTS_TIMEOUT_MS, WorkerMetrics } from './metrics';

function jobOf(attemptsMade: number, attempts = 3): Job {
  return { attemptsMade, opts: { attempts } } as unknown as Job;
}

const DONE: CreateLinksJobResult = { status: 'done', result: { results: [] } } as never;
const ABANDONED: CreateLinksJobResult = { status: 'abandoned', reason: 'deadline_passed' };

describe('outcomeOf', () => {
  it.each([
    ['completed', jobOf(0), { value: DONE }],
    ['abandoned', jobOf(0), { value: ABANDONED }],
    ['retried', jobOf(0), { error: new Error('deadlock') }],
    ['retried', jobOf(1), { error: new Error('deadlock') }],
    ['failed', jobOf(2), { error: new Error('deadlock') }],
    ['failed', jobOf(0), { error: new UnrecoverableError('past its deadline') }],
  ] as const)('%s', (outcome, job, result) => {
    expect(outcomeOf(job, result)).toBe(outcome);
  });
});

describe('WorkerMetrics', () => {
  it('counts each attempt through the measured processor', async () => {
    const metrics = new WorkerMetrics(createMetricsRegistry());
    const processor = measuredProcessor(() => Promise.resolve(DONE), metrics);
    await processor(jobOf(0));
    const failing = measuredProcessor(() => Promise.reject(new Error('boom')), metrics);
    await expect(failing(jobOf(2))).rejects.toThrow('boom');
    const text = await metrics.registry.metrics();
    expect(text).toContain('linkservice_creation_jobs_total{outcome="completed"} 1');
    expect(text).toContain('linkservice_creation_jobs_total{outcome="failed"} 1');
    expect(text).toContain('linkservice_creation_jobs_total{outcome="retried"} 0');
    expect(text).toContain(
      'linkservice_creation_job_duration_seconds_count{outcome="completed"} 1',
    );
  });

  it('reads the queue at scrape time, and leaves it out when Redis does not answer in time', async () => {
    const metrics = new WorkerMetrics(createMetricsRegistry());
    metrics.readQueueFrom(() => Promise.resolve({ waiting: 4, active: 1, delayed: 0, failed: 2 }));
    const text = await metrics.registry.metrics();
    expect(text).toContain('linkservice_queue_jobs{state="waiting"} 4');
    expect(text).toContain('linkservice_queue_jobs{state="failed"} 2');

    metrics.readQueueFrom(() => new Promise(() => undefined));
    const started = Date.now();
    const frozen = await metrics.registry.metrics();
    expect(Date.now() - started).toBeLessThan(QUEUE_COUNTS_TIMEOUT_MS + 1_000);
    expect(frozen).not.toMatch(/^linkservice_queue_jobs\{/m);
    expect(frozen).toContain('linkservice_creation_jobs_total');
  });

  it("reports the oldest waiting job's age, 0 when none waits, NaN when Redis does not answer", async () => {
    const metrics = new WorkerMetrics(createMetricsRegistry());
    const counts = () => Promise.resolve({ waiting: 1, active: 0, delayed: 0, failed: 0 });
    const age = async () =>
      /^linkservice_queue_oldest_waiting_seconds (\S+)$/m.exec(
        await metrics.registry.metrics(),
      )?.[1];

    metrics.readQueueFrom(counts, () => Promise.resolve(Date.now() - 42_000));
    expect(Number(await age())).toBeGreaterThanOrEqual(42);
    expect(Number(await age())).toBeLessThan(60);
    metrics.readQueueFrom(counts, () => Promise.resolve(null));
    expect(await age()).toBe('0');
    metrics.readQueueFrom(counts, () => Promise.reject(new Error('Connection is closed.')));
    // prom-client writes it as `Nan`; Prometheus reads any case.
    expect(await age()).toMatch(/^nan$/i);
  });
});
