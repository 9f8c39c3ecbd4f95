import { Writable } from 'node:stream';
import type { Logger } from '@linkservice/logger';
import { createLogger } from '@linkservice/logger';

/** A logger whose JSON lines a test reads back, parsed, in the order written. */
export function loggerToLines(service = 'worker'): {
  logger: Logger;
  lines: Record<string, unknown>[];
} {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: createLogger(service, 'info', stream) };
}
