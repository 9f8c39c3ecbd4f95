import childProcess from 'node:child_process';
import net from 'node:net';

/**
 * Runs around every unit test file (setupFilesAfterEnv): while it runs, a unit test that opens a
 * socket (Postgres, Redis, HTTP) or starts a process fails at once, naming the tier it belongs
 * to, instead of passing on a machine where the database happens to answer. Node's own modules
 * are shared by every test file a jest worker runs, whatever its project, so the originals are
 * put back after the file: an integration test that the same worker runs next must connect.
 */
function refuse(what: string): never {
  throw new Error(
    `a unit test ${what}: name the file *.integration.test.ts (Postgres, Redis, sockets) or ` +
      '*.e2e.test.ts (spawned processes)',
  );
}

const PROCESS_STARTERS = [
  'spawn',
  'spawnSync',
  'exec',
  'execSync',
  'execFile',
  'execFileSync',
  'fork',
] as const;

const originals = {
  connect: Object.getOwnPropertyDescriptor(net.Socket.prototype, 'connect'),
  listen: Object.getOwnPropertyDescriptor(net.Server.prototype, 'listen'),
  starters: PROCESS_STARTERS.map(
    (name) => [name, Object.getOwnPropertyDescriptor(childProcess, name)] as const,
  ),
};

net.Socket.prototype.connect = function connect(): never {
  return refuse('opened a socket');
};
net.Server.prototype.listen = function listen(): never {
  return refuse('listened on a socket');
};
for (const name of PROCESS_STARTERS) {
  Object.defineProperty(childProcess, name, {
    value: () => refuse('started a process'),
    configurable: true,
    writable: true,
  });
}

afterAll(() => {
  if (originals.connect) Object.defineProperty(net.Socket.prototype, 'connect', originals.connect);
  if (originals.listen) Object.defineProperty(net.Server.prototype, 'listen', originals.listen);
  for (const [name, descriptor] of originals.starters) {
    if (descriptor) Object.defineProperty(childProcess, name, descriptor);
  }
});
