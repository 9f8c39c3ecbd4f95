import childProcess from 'node:child_process';
import net from 'node:net';

// unit-setup.ts runs around this file as around every unit test file.
describe('the unit tier', () => {
  it('refuses a socket', () => {
    expect(() => net.connect(1, '127.0.0.1')).toThrow(/a unit test opened a socket/);
  });

  it('refuses a listener', () => {
    expect(() => net.createServer().listen(0)).toThrow(/a unit test listened on a socket/);
  });

  it('refuses a process', () => {
    expect(() => childProcess.spawn('true')).toThrow(/a unit test started a process/);
  });
});
