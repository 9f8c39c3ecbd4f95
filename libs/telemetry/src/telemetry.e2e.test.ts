import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { testEnvironment } from '@linkservice/testing';

const PROBE = join(__dirname, '..', 'dist', 'testing', 'trace-probe.js');

describe('traces of a service', () => {
  it('record HTTP, Postgres and Redis work without a secret or an install id sent through any of them, and no probes', async () => {
    if (!existsSync(PROBE)) throw new Error(`${PROBE} is missing: run pnpm exec tsc -b first`);
    const env = testEnvironment();
    const secret = `ls_sk_live_${randomBytes(24).toString('hex')}`;
    const installId = `ins_${randomBytes(13).toString('hex').toUpperCase()}`;
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [PROBE], {
      env: {
        PATH: process.env.PATH,
        DATABASE_URL: env.databaseUrl,
        REDIS_URL: env.redisUrl,
        REDIS_PREFIX: env.redisPrefix,
        TRACE_PROBE_SECRET: secret,
        TRACE_PROBE_INSTALL_ID: installId,
        OTEL_TRACES_EXPORTER: 'console',
        OTEL_METRICS_EXPORTER: 'none',
        OTEL_LOGS_EXPORTER: 'none',
      },
      timeout: 20_000,
    });

    // The spans are there, so their absence of the secret means something.
    expect(stdout).toContain("'url.path': '/api/v1/app'");
    expect(stdout).toContain("'db.query.text': 'SELECT $1::text AS value'");
    for (const command of ['eval', 'set', 'hincrby']) {
      expect(stdout).toContain(`'db.query.text': '${command}'`);
    }
    // Probes leave no server span (the probe's own client spans name no path).
    expect(stdout.match(/'url\.path': '\/(healthz|readyz)'/g) ?? []).toEqual([]);
    expect(stdout).toContain("'url.path': '/api/v1/sdk/installs/:installId'");
    expect(stdout).not.toContain(installId);
    expect(stdout).not.toContain(secret);
    expect(stderr).not.toContain(secret);
  });
});

describe('telemetry switched off', () => {
  it('does not even load the SDK', async () => {
    const index = join(__dirname, '..', 'dist', 'index.js');
    const script = `
      require(${JSON.stringify(index)}).startTelemetry('probe', {}, { packageJsonPath: 'package.json' });
      const loaded = Object.keys(require.cache).filter((path) => path.includes('@opentelemetry'));
      process.stdout.write(JSON.stringify(loaded));`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], {
      env: { PATH: process.env.PATH },
      timeout: 20_000,
    });
    expect(JSON.parse(stdout)).toEqual([]);
  });
});
