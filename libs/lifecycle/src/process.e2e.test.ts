import { execFile } from 'node:child_process';
import { join } from 'node:path';

const LIFECYCLE = join(__dirname, '..', 'dist', 'index.js');

function run(script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script], { timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (error.code as number) : 0, stdout, stderr });
    });
  });
}

/** A service whose start is `start`, with a config and deps that need nothing. */
function service(name: string, start: string): string {
  return `
    require(${JSON.stringify(LIFECYCLE)}).runService({
      name: ${JSON.stringify(name)},
      telemetry: { shutdown: async () => undefined },
      loadConfig: () => ({ LOG_LEVEL: 'silent', SHUTDOWN_GRACE_MS: 1000 }),
      buildDeps: () => ({ deps: {}, close: async () => undefined }),
      start: async () => { ${start} },
    });`;
}

describe('runService', () => {
  it('turns a failure to start into one stderr line and exit code 1', async () => {
    const result = await run(
      service(
        'gateway',
        `throw new Error('listen EADDRINUSE: address already in use 127.0.0.1:8080');`,
      ),
    );
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: 'gateway failed to start: listen EADDRINUSE: address already in use 127.0.0.1:8080\n',
    });
  });

  it.each([
    [
      `{ intake: 'jobs', ports: { health: 8082, metrics: 41877 }, stop: async () => 'drained' }`,
      'worker started: health port 8082, metrics port 41877\n',
    ],
    [`{ intake: 'jobs', stop: async () => 'drained' }`, 'worker started\n'],
  ])('leaves a service that started (%s) alone once it said so', async (started, line) => {
    const result = await run(service('worker', `process.stdout.write('up'); return ${started};`));
    expect(result).toEqual({ code: 0, stdout: 'up', stderr: line });
  });
});
