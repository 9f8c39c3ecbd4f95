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

describe('runService', () => {
  it('turns a failure to start into one stderr line and exit code 1', async () => {
    const result = await run(`
      require(${JSON.stringify(LIFECYCLE)}).runService('gateway', async () => {
        throw new Error('listen EADDRINUSE: address already in use 127.0.0.1:8080');
      });`);
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: 'gateway failed to start: listen EADDRINUSE: address already in use 127.0.0.1:8080\n',
    });
  });

  it('leaves a service that started alone', async () => {
    const result = await run(`
      require(${JSON.stringify(LIFECYCLE)}).runService('worker', async () => {
        process.stdout.write('started');
      });`);
    expect(result).toEqual({ code: 0, stdout: 'started', stderr: '' });
  });
});
