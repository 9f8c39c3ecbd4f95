import { QueryDeadlineExceeded } from '@linkservice/db';
import { isDependencyFailure } from './dependency-failure';

const withCode = (code: string, message = 'x') => Object.assign(new Error(message), { code });

describe('isDependencyFailure', () => {
  it.each([
    ['a refused connection', withCode('ECONNREFUSED')],
    ['a reset connection', withCode('ECONNRESET')],
    ['a Postgres connection exception (class 08)', withCode('08006')],
    ['Postgres shutting down', withCode('57P01')],
    ['Postgres starting up', withCode('57P03')],
    ['too many connections', withCode('53300')],
    ['a pg pool connect timeout', new Error('timeout exceeded when trying to connect')],
    ['a dropped pg connection', new Error('Connection terminated unexpectedly')],
    ['ioredis with the socket closed', new Error('Connection is closed.')],
    [
      'ioredis giving up retries',
      Object.assign(new Error('Reached the max retries per request limit'), {
        name: 'MaxRetriesPerRequestError',
      }),
    ],
    ['the rate limiter with Redis away', new Error('Redis connection is not ready')],
    ['a pg query_timeout', new Error('Query read timeout')],
    ['a statement_timeout', withCode('57014', 'canceling statement due to statement timeout')],
    ['an ioredis commandTimeout', new Error('Command timed out')],
    ['a passed query deadline', new QueryDeadlineExceeded()],
    [
      'a pool wait past the deadline',
      new QueryDeadlineExceeded('no connection before the deadline'),
    ],
    ['an AggregateError of refused connects', new AggregateError([withCode('ECONNREFUSED')])],
    ['a wrapped cause', new Error('query failed', { cause: withCode('ETIMEDOUT') })],
  ])('recognises %s', (_case, error) => {
    expect(isDependencyFailure(error)).toBe(true);
  });

  it.each([
    ['a plain bug', new TypeError('cannot read properties of undefined')],
    ['a missing relation', withCode('42P01', 'relation "links" does not exist')],
    ['a unique violation', withCode('23505')],
    ['a syntax error', withCode('42601')],
    ['a non-error', 'ECONNREFUSED'],
    ['null', null],
  ])('does not treat %s as an outage', (_case, error) => {
    expect(isDependencyFailure(error)).toBe(false);
  });

  it('stops on a cause cycle', () => {
    const a = new Error('a');
    const b = new Error('b', { cause: a });
    Object.assign(a, { cause: b });
    expect(isDependencyFailure(a)).toBe(false);
  });
});
