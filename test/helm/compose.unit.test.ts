import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { APP_SERVICES, LONG_RUNNING, REPO_ROOT, composeServices } from './compose-file';

/**
 * No Docker engine runs these tests, so the laptop stack and the image entrypoint are checked
 * for the promises they make: hardening, start order, health checks on the configured ports, and
 * entrypoint commands that point at real programs of the workspace.
 */

const services = composeServices;
const entrypoint = readFileSync(path.join(REPO_ROOT, 'deploy/docker-entrypoint.sh'), 'utf8');

describe('deploy/docker-compose.yml', () => {
  it('runs postgres, redis, the migration and the three services', () => {
    expect(Object.keys(services).sort()).toEqual(['postgres', 'redis', ...APP_SERVICES].sort());
    expect(services.postgres.image).toMatch(/^postgres:15/);
    expect(services.redis.image).toMatch(/^redis:7/);
    // BullMQ loses jobs when Redis evicts keys.
    expect(services.redis.command).toEqual(
      expect.arrayContaining(['--maxmemory-policy', 'noeviction']),
    );
  });

  it.each(APP_SERVICES)(
    'builds %s from deploy/Dockerfile and hardens it like the chart',
    (name) => {
      const service = services[name];
      expect(service.build).toEqual({ context: '..', dockerfile: 'deploy/Dockerfile' });
      expect(service.command).toEqual([name === 'gateway' ? 'gateway-dev' : name]);
      expect(service.user).toBe('10001:10001');
      expect(service.read_only).toBe(true);
      expect(service.tmpfs).toEqual(['/tmp']);
      expect(service.cap_drop).toEqual(['ALL']);
      expect(service.security_opt).toContain('no-new-privileges:true');
    },
  );

  it('connects every service to the compose postgres and redis with matching credentials', () => {
    const postgres = services.postgres.environment!;
    const expected = `postgres://${postgres.POSTGRES_USER}:${postgres.POSTGRES_PASSWORD}@postgres:5432/${postgres.POSTGRES_DB}`;
    for (const name of APP_SERVICES) {
      expect(services[name].environment).toMatchObject({
        DATABASE_URL: expected,
        REDIS_URL: 'redis://redis:6379',
        NODE_ENV: 'production',
      });
    }
  });

  it('migrates once postgres is healthy, and starts the services only after that', () => {
    expect(services.migrate.depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    for (const name of LONG_RUNNING) {
      expect(services[name].depends_on).toEqual({
        migrate: { condition: 'service_completed_successfully' },
        redis: { condition: 'service_healthy' },
      });
    }
  });

  it('gives the receipt signing key to the gateway only, which makes a development key without one', () => {
    // gateway-dev (services/gateway/src/dev.main.ts) generates a key, with a WARNING, when
    // RECEIPT_SIGNING_KEY is empty; a key set in the shell reaches the gateway unchanged.
    expect(services.gateway.command).toEqual(['gateway-dev']);
    expect(services.gateway.environment!.RECEIPT_SIGNING_KEY).toBe('${RECEIPT_SIGNING_KEY:-}');
    for (const name of ['migrate', 'worker', 'redirect'] as const) {
      expect({ name, keys: Object.keys(services[name].environment!) }).toEqual({
        name,
        keys: expect.not.arrayContaining(['RECEIPT_SIGNING_KEY']),
      });
    }
  });

  it('gives the gateway and the worker one webhook encryption key, overridable from the shell', () => {
    // The gateway seals endpoint signing secrets that the worker opens to sign deliveries.
    const key = services.gateway.environment!.WEBHOOK_ENCRYPTION_KEY;
    expect(key).toMatch(/^\$\{WEBHOOK_ENCRYPTION_KEY:-[A-Za-z0-9+/]{43}=\}$/);
    expect(services.worker.environment!.WEBHOOK_ENCRYPTION_KEY).toBe(key);
  });

  it.each([
    ['gateway', 'GATEWAY_PORT'],
    ['worker', 'WORKER_HEALTH_PORT'],
    ['redirect', 'REDIRECT_PORT'],
  ] as const)('health-checks %s on /readyz at its configured port', (name, portVariable) => {
    const service = services[name];
    const port = service.environment![portVariable];
    expect(service.healthcheck!.test.join(' ')).toContain(`http://127.0.0.1:${port}/readyz`);
    for (const mapping of service.ports ?? []) expect(mapping).toMatch(new RegExp(`:${port}$`));
  });
});

describe('deploy/docker-entrypoint.sh', () => {
  const commands = [
    ...entrypoint.matchAll(/^\s+([a-z-]+)\) exec node (\$NODE_FLAGS )?\/app\/(\S+\.js)/gm),
  ].map((match) => ({ command: match[1], flags: match[2] !== undefined, program: match[3] }));

  it('runs the services with the node options of deploy/node-flags, the one-off commands without', () => {
    expect(Object.fromEntries(commands.map(({ command, flags }) => [command, flags]))).toEqual({
      gateway: true,
      'gateway-dev': true,
      worker: true,
      redirect: true,
      migrate: false,
      linkctl: false,
    });
  });

  it('knows every command compose and the chart run, plus linkctl', () => {
    expect(commands.map((c) => c.command).sort()).toEqual(
      ['gateway', 'gateway-dev', 'linkctl', 'migrate', 'redirect', 'worker'].sort(),
    );
  });

  it.each(['gateway', 'gateway-dev', 'linkctl', 'migrate', 'redirect', 'worker'])(
    'starts %s from the compiled output of an existing source file',
    (command) => {
      const { program } = commands.find((c) => c.command === command)!;
      // dist/<name>.js is compiled from src/<name>.ts by tsc -b.
      const source = program.replace('/dist/', '/src/').replace(/\.js$/, '.ts');
      expect(existsSync(path.join(REPO_ROOT, source))).toBe(true);
    },
  );

  it('execs node so the service itself receives SIGTERM', () => {
    expect(commands.length).toBeGreaterThan(0);
    expect(entrypoint).not.toMatch(/^\s+[a-z-]+\) node /m);
  });
});
