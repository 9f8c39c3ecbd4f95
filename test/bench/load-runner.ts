import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import { newId } from '@linkservice/db';
import { randomBase62 } from '@linkservice/keys';
import pg from 'pg';
import { summarizeLatencies } from './latency';
import type {
  HttpLoadJob,
  LoadJob,
  LoadResult,
  LoadRunnerMessage,
  SqlInsertLoadJob,
} from './load-protocol';

/**
 * Forked by run.ts for each measurement: receives one LoadJob over IPC, runs it, sends back one
 * LoadRunnerMessage and exits. Keeping the client in its own process keeps its CPU use out of
 * the orchestrator, as a real client would be.
 */

/** Autocannon's default per-request timeout; a slower answer counts as a transport error. */
const REQUEST_TIMEOUT_SECONDS = 10;

function runHttp(job: HttpLoadJob): Promise<Omit<LoadResult, 'warmupRequests'>> {
  const latencies: number[] = [];
  const unexpectedStatuses = new Map<number, number>();
  let transportErrors = 0;
  let sampleError: string | undefined;
  let next = 0;
  const { paths, bodies } = job;
  const started = performance.now();

  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: job.origin,
        connections: job.connections,
        duration: job.durationSeconds,
        timeout: REQUEST_TIMEOUT_SECONDS,
        method: job.method,
        headers: job.headers,
        body: job.body,
        requests: [
          {
            method: job.method,
            headers: job.headers,
            body: job.body,
            setupRequest: (request) => {
              const index = next++;
              return {
                ...request,
                path: paths[index % paths.length],
                ...(bodies ? { body: bodies[index % bodies.length] } : {}),
              };
            },
          },
        ],
      },
      (error: unknown) => {
        if (error) {
          reject(error instanceof Error ? error : new Error('autocannon failed', { cause: error }));
          return;
        }
        const elapsedSeconds = (performance.now() - started) / 1000;
        const unexpected = [...unexpectedStatuses.values()].reduce((a, b) => a + b, 0);
        resolve({
          succeeded: latencies.length,
          errors: unexpected + transportErrors,
          unexpectedStatuses: Object.fromEntries(unexpectedStatuses),
          transportErrors,
          sampleError,
          elapsedSeconds,
          perSecond: latencies.length / elapsedSeconds,
          ...summarizeLatencies(latencies),
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode === job.expectStatus) latencies.push(responseTime);
      else unexpectedStatuses.set(statusCode, (unexpectedStatuses.get(statusCode) ?? 0) + 1);
    });
    instance.on('reqError', (error: unknown) => {
      transportErrors++;
      sampleError ??= error instanceof Error ? error.message : String(error);
    });
  });
}

/**
 * The creation baseline: what the service's own INSERT costs without HTTP, queue or worker.
 * The same columns a create request fills, a fresh id and alias per row, RETURNING * as the
 * worker needs the rows back.
 */
async function runSqlInsert(job: SqlInsertLoadJob): Promise<Omit<LoadResult, 'warmupRequests'>> {
  const client = new pg.Client({ connectionString: job.databaseUrl });
  await client.connect();
  const latencies: number[] = [];
  let errors = 0;
  let sampleError: string | undefined;
  const perRow = 8;
  const placeholders = Array.from({ length: job.rowsPerStatement }, (_, row) => {
    const p = (i: number): string => `$${row * perRow + i}`;
    return `(${p(1)}, ${p(2)}, 'live', ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}::text[], ${p(8)}::jsonb)`;
  }).join(', ');
  const text = `INSERT INTO links (id, app_id, environment, alias, web_fallback_url, title, campaign, tags, deep_link_data)
    VALUES ${placeholders} RETURNING *`;
  const started = performance.now();
  const deadline = started + job.durationSeconds * 1000;
  try {
    while (performance.now() < deadline) {
      const values: unknown[] = [];
      for (let row = 0; row < job.rowsPerStatement; row++) {
        const alias = randomBase62(10);
        values.push(
          newId('lnk'),
          job.appId,
          alias,
          `https://example.com/landing/${alias}`,
          'Bench baseline link',
          'bench-baseline',
          ['bench', 'baseline'],
          JSON.stringify({ screen: 'product', productId: row }),
        );
      }
      const before = performance.now();
      try {
        await client.query(text, values);
        latencies.push(performance.now() - before);
      } catch (error) {
        errors++;
        sampleError ??= error instanceof Error ? error.message : String(error);
      }
    }
  } finally {
    await client.end();
  }
  const elapsedSeconds = (performance.now() - started) / 1000;
  return {
    succeeded: latencies.length,
    errors,
    unexpectedStatuses: {},
    transportErrors: errors,
    sampleError,
    elapsedSeconds,
    perSecond: latencies.length / elapsedSeconds,
    ...summarizeLatencies(latencies),
  };
}

function measure(job: LoadJob): Promise<Omit<LoadResult, 'warmupRequests'>> {
  switch (job.kind) {
    case 'http':
      return runHttp(job);
    case 'sql-insert':
      return runSqlInsert(job);
  }
}

async function run(job: LoadJob): Promise<LoadResult> {
  const warmup =
    job.warmupSeconds > 0
      ? await measure({ ...job, durationSeconds: job.warmupSeconds })
      : undefined;
  const result = await measure(job);
  return { ...result, warmupRequests: warmup ? warmup.succeeded + warmup.errors : 0 };
}

function reply(message: LoadRunnerMessage): void {
  process.send?.(message, () => {
    process.disconnect();
  });
}

if (!process.send) {
  process.stderr.write('load-runner is forked by run.ts with an IPC channel\n');
  process.exit(2);
}
process.once('message', (job: LoadJob) => {
  run(job).then(
    (result) => {
      reply({ ok: true, result });
    },
    (error: unknown) => {
      reply({ ok: false, error: error instanceof Error ? error.message : String(error) });
    },
  );
});
