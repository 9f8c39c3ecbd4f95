import type { Redis } from 'ioredis';
import {
  NOT_WRITABLE_MESSAGE,
  RedisCallError,
  callRedis,
  classifyRedisFailure,
  redisFailureOf,
} from './redis-calls';

describe('classifyRedisFailure', () => {
  it('calls a command refused unwritten, or one of a client not ready, not sent', () => {
    expect(classifyRedisFailure(true, new Error(NOT_WRITABLE_MESSAGE))).toBe('not-sent');
    expect(classifyRedisFailure(false, new Error('Command timed out'))).toBe('not-sent');
    expect(classifyRedisFailure(false, new Error('Connection is closed.'))).toBe('not-sent');
  });

  it('calls anything else of a ready client uncertain: it may have run, or may still', () => {
    for (const message of [
      'Command timed out',
      'Connection is closed.',
      'Reached the max retries per request limit (which is 1). Refer to "maxRetriesPerRequest" option for details.',
      'ERR something',
    ]) {
      expect(classifyRedisFailure(true, new Error(message))).toBe('uncertain');
    }
    expect(classifyRedisFailure(true, 'not an error')).toBe('uncertain');
  });
});

describe('callRedis', () => {
  const client = (status: string) => ({ status }) as Pick<Redis, 'status'>;

  it('does not call a client that is not ready, and says not sent', async () => {
    const call = jest.fn(() => Promise.resolve('OK'));
    const failure = await callRedis(client('reconnecting'), call).catch((error: unknown) => error);
    expect(call).not.toHaveBeenCalled();
    expect(redisFailureOf(failure)).toBe('not-sent');
  });

  it('passes an answer through, and wraps a failure with what it may have done', async () => {
    expect(await callRedis(client('ready'), () => Promise.resolve(7))).toBe(7);
    const timeout = new Error('Command timed out');
    const failure = await callRedis(client('ready'), () => Promise.reject(timeout)).catch(
      (error: unknown) => error,
    );
    expect(failure).toBeInstanceOf(RedisCallError);
    expect(failure).toMatchObject({ failure: 'uncertain', cause: timeout });
    const refused = await callRedis(client('ready'), () =>
      Promise.reject(new Error(NOT_WRITABLE_MESSAGE)),
    ).catch((error: unknown) => error);
    expect(redisFailureOf(refused)).toBe('not-sent');
  });

  it('takes any other error for uncertain', () => {
    expect(redisFailureOf(new Error('reply could not be read'))).toBe('uncertain');
  });
});
