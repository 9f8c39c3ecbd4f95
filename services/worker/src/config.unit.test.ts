import { randomBytes } from 'node:crypto';
import { ConfigError } from '@linkservice/config';
import { loadConfig } from './config';

/** The one variable without a default. */
const required = { WEBHOOK_ENCRYPTION_KEY: randomBytes(32).toString('base64') };

describe('worker config', () => {
  it('has working defaults', () => {
    const config = loadConfig(required);
    expect(config).toMatchObject({
      WORKER_HEALTH_PORT: 8082,
      WORKER_CONCURRENCY: 8,
      CREATION_REQUESTS_RETENTION_HOURS: 24,
      INSTALL_RETENTION_DAYS: 90,
      ANALYTICS_HOURLY_RETENTION_DAYS: 90,
      ANALYTICS_DAILY_RETENTION_DAYS: 800,
      WORKER_TEST_DELAY_MS: 0,
      REDIS_PREFIX: 'ls',
    });
  });

  it('lists every bad variable at once', () => {
    try {
      loadConfig({ ...required, WORKER_HEALTH_PORT: 'x', WORKER_CONCURRENCY: '0' });
      throw new Error('expected a ConfigError');
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      const problems = (error as ConfigError).problems.join('\n');
      expect(problems).toContain('WORKER_HEALTH_PORT');
      expect(problems).toContain('WORKER_CONCURRENCY');
    }
  });

  it('takes INSTALL_RETENTION_DAYS as a positive whole number of days', () => {
    expect(loadConfig({ ...required, INSTALL_RETENTION_DAYS: '30' }).INSTALL_RETENTION_DAYS).toBe(
      30,
    );
    for (const bad of ['0', '-1', '1.5', 'ninety']) {
      expect(() => loadConfig({ ...required, INSTALL_RETENTION_DAYS: bad })).toThrow(
        /INSTALL_RETENTION_DAYS: must be a positive integer/,
      );
    }
  });

  it('keeps daily analytics at least as long as hourly ones', () => {
    expect(
      loadConfig({
        ...required,
        ANALYTICS_HOURLY_RETENTION_DAYS: '30',
        ANALYTICS_DAILY_RETENTION_DAYS: '30',
      }),
    ).toMatchObject({ ANALYTICS_HOURLY_RETENTION_DAYS: 30, ANALYTICS_DAILY_RETENTION_DAYS: 30 });
    expect(() =>
      loadConfig({
        ...required,
        ANALYTICS_HOURLY_RETENTION_DAYS: '31',
        ANALYTICS_DAILY_RETENTION_DAYS: '30',
      }),
    ).toThrow(/ANALYTICS_DAILY_RETENTION_DAYS: must be at least ANALYTICS_HOURLY_RETENTION_DAYS/);
    // The default daily retention (800) is what a longer hourly one is checked against.
    expect(() => loadConfig({ ...required, ANALYTICS_HOURLY_RETENTION_DAYS: '801' })).toThrow(
      /ANALYTICS_DAILY_RETENTION_DAYS/,
    );
    for (const bad of ['0', '-1', '1.5']) {
      expect(() => loadConfig({ ...required, ANALYTICS_HOURLY_RETENTION_DAYS: bad })).toThrow(
        /ANALYTICS_HOURLY_RETENTION_DAYS: must be a positive integer/,
      );
      expect(() => loadConfig({ ...required, ANALYTICS_DAILY_RETENTION_DAYS: bad })).toThrow(
        /ANALYTICS_DAILY_RETENTION_DAYS: must be a positive integer/,
      );
    }
  });

  it('keeps creation requests at least as long as idempotency keys (24 hours)', () => {
    expect(
      loadConfig({ ...required, CREATION_REQUESTS_RETENTION_HOURS: '48' })
        .CREATION_REQUESTS_RETENTION_HOURS,
    ).toBe(48);
    expect(() => loadConfig({ ...required, CREATION_REQUESTS_RETENTION_HOURS: '23' })).toThrow(
      /CREATION_REQUESTS_RETENTION_HOURS: must be at least 24/,
    );
  });

  it('allows the test-only delay only with NODE_ENV=test', () => {
    expect(
      loadConfig({ ...required, NODE_ENV: 'test', WORKER_TEST_DELAY_MS: '200' })
        .WORKER_TEST_DELAY_MS,
    ).toBe(200);
    expect(() =>
      loadConfig({ ...required, NODE_ENV: 'production', WORKER_TEST_DELAY_MS: '200' }),
    ).toThrow(/WORKER_TEST_DELAY_MS/);
  });
});
