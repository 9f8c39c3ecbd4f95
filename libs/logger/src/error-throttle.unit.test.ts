import { Writable } from 'node:stream';
import { createLogger } from './index';
import { throttledErrorLog } from './error-throttle';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger('test', 'info', stream) };
}

/** The error messages of the lines logged so far, once the logger's stream has written them. */
async function loggedMessages(lines: Record<string, unknown>[]): Promise<string[]> {
  await new Promise(setImmediate);
  return lines.map((line) => (line.err as { message: string }).message);
}

describe('throttledErrorLog', () => {
  let clock = 0;
  const now = () => clock;
  beforeEach(() => {
    clock = 0;
  });

  it('logs the first error, counts repeats within the interval, and reports the count after it', async () => {
    const { lines, logger } = capture();
    const log = throttledErrorLog(logger, {
      message: 'queue: redis error',
      intervalMs: 1_000,
      now,
    });
    log(new Error('ECONNREFUSED'));
    for (let i = 0; i < 5; i += 1) {
      clock += 100;
      log(new Error('ECONNREFUSED'));
    }
    clock = 1_000;
    log(new Error('ECONNREFUSED'));
    await new Promise(setImmediate);
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatchObject({ level: 'warn', msg: 'queue: redis error' });
    expect(lines[0]).not.toHaveProperty('repeated');
    expect(lines[1]).toMatchObject({ repeated: 5, err: { message: 'ECONNREFUSED' } });
  });

  it('logs a different message at once', async () => {
    const { lines, logger } = capture();
    const log = throttledErrorLog(logger, { message: 'm', now, fields: { queue: 'q' } });
    log(new Error('ECONNREFUSED'));
    log(new Error('ECONNREFUSED'));
    log(new Error('READONLY'));
    expect(await loggedMessages(lines)).toEqual(['ECONNREFUSED', 'READONLY']);
    expect(lines[1]).toMatchObject({ queue: 'q' });
    expect(lines[1]).not.toHaveProperty('repeated');
  });

  it('throttles each message apart, so errors that alternate through an outage are held back too', async () => {
    const { lines, logger } = capture();
    const log = throttledErrorLog(logger, { message: 'm', now });
    for (let n = 0; n < 5; n++) {
      log(new Error('ECONNREFUSED'));
      log(new Error('Connection is closed.'));
    }
    expect(await loggedMessages(lines)).toEqual(['ECONNREFUSED', 'Connection is closed.']);
  });

  it('takes non-Error values', async () => {
    const { lines, logger } = capture();
    const log = throttledErrorLog(logger, { message: 'm', now, level: 'error' });
    log('boom');
    log('boom');
    await new Promise(setImmediate);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 'error' });
  });
});
