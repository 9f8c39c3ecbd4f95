import childProcess from 'node:child_process';
import net from 'node:net';

/**
 * Runs before every unit test file: a unit test that opens a socket (Postgres, Redis, HTTP) or
 * starts a process fails at once, naming the tier it belongs to, instead of passing on a machine
 * where the database happens to answer.
 */
function refuse(what: string): never {
  throw new Error(
    `a unit test ${what}: name the file *.integration.test.ts (Postgres, Redis, sockets) or ` +
      '*.e2e.test.ts (spawned processes)',
  );
}

net.Socket.prototype.connect = function connect(): never {
  return refuse('opened a socket');
};
net.Server.prototype.listen = function listen(): never {
  return refuse('listened on a socket');
};
for (const name of [
  'spawn',
  'spawnSync',
  'exec',
  'execSync',
  'execFile',
  'execFileSync',
  'fork',
] as const) {
  Object.defineProperty(childProcess, name, { value: () => refuse('started a process') });
}
