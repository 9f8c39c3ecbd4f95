import { checkReadiness } from './readiness';

const answers = () => Promise.resolve('PONG');
const refuses = () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:6379'));
const hangs = () => new Promise<never>(() => undefined);

describe('checkReadiness', () => {
  it('is ready when every probe answers', async () => {
    await expect(checkReadiness({ postgres: answers, redis: answers })).resolves.toEqual({
      ready: true,
      failures: [],
    });
  });

  it('names each probe that failed, with why', async () => {
    await expect(checkReadiness({ postgres: answers, redis: refuses })).resolves.toEqual({
      ready: false,
      failures: [{ dependency: 'redis', reason: 'connect ECONNREFUSED 127.0.0.1:6379' }],
    });
  });

  it('fails a probe that does not answer in time, without waiting for it', async () => {
    const started = Date.now();
    const readiness = await checkReadiness({ postgres: hangs, redis: refuses }, 100);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(readiness).toEqual({
      ready: false,
      failures: [
        { dependency: 'postgres', reason: 'no answer within 100 ms' },
        { dependency: 'redis', reason: 'connect ECONNREFUSED 127.0.0.1:6379' },
      ],
    });
  });
});
