import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { loadServiceConfigs } from './service-config';

/**
 * No Docker engine runs these tests, so the laptop stack and the image entrypoint are checked
 * for the promises they make: hardening, start order, health checks on the configured ports, and
 * entrypoint commands that point at real programs of the workspace.
 */

const root = path.resolve(__dirname, '../..');

interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  user?: string;
  read_only?: boolean;
  tmpfs?: string[];
  cap_drop?: string[];
  security_opt?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: string[];
}

const compose = parse(readFileSync(path.join(root, 'deploy/docker-compose.yml'), 'utf8'), {
  merge: true,
}) as { services: Record<string, ComposeService> };
const { services } = compose;
const APP_SERVICES = ['migrate', 'gateway', 'worker', 'redirect'] as const;
const LONG_RUNNING = ['gateway', 'worker', 'redirect'] as const;
const entrypoint = readFileSync(path.join(root, 'deploy/docker-entrypoint.sh'), 'utf8');

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
      expect(service.command).toEqual([name]);
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

/** What compose makes of `${VAR:-default}` when VAR is unset. */
function withDefaults(environment: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(environment).map(([name, value]) => [
      name,
      value.replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1'),
    ]),
  );
}

describe('deploy/docker-compose.yml service configuration', () => {
  it('is accepted by each service, which knows every variable compose sets', async () => {
    const environments = Object.fromEntries(
      LONG_RUNNING.map((name) => [name, withDefaults(services[name].environment!)]),
    );
    const results = await loadServiceConfigs(environments);
    const known = new Set(LONG_RUNNING.flatMap((name) => results[name].known));
    for (const name of LONG_RUNNING) {
      expect({ name, problem: results[name].problem }).toEqual({ name, problem: undefined });
      const unknown = Object.keys(environments[name]).filter((variable) => !known.has(variable));
      expect({ name, unknown }).toEqual({ name, unknown: [] });
    }
    expect(results.gateway.parsed).toMatchObject({ GATEWAY_PORT: 8080, NODE_ENV: 'production' });
    expect(results.redirect.parsed).toMatchObject({ LINK_DOMAIN: 'links.localhost' });
  });
});

describe('deploy/docker-entrypoint.sh', () => {
  const commands = [...entrypoint.matchAll(/^\s+([a-z]+)\) exec node \/app\/(\S+\.js)/gm)].map(
    (match) => ({ command: match[1], program: match[2] }),
  );

  it('knows every command compose and the chart run, plus linkctl', () => {
    expect(commands.map((c) => c.command).sort()).toEqual(
      ['gateway', 'linkctl', 'migrate', 'redirect', 'worker'].sort(),
    );
  });

  it.each(['gateway', 'linkctl', 'migrate', 'redirect', 'worker'])(
    'starts %s from the compiled output of an existing source file',
    (command) => {
      const { program } = commands.find((c) => c.command === command)!;
      // dist/<name>.js is compiled from src/<name>.ts by tsc -b.
      const source = program.replace('/dist/', '/src/').replace(/\.js$/, '.ts');
      expect(existsSync(path.join(root, source))).toBe(true);
    },
  );

  it('execs node so the service itself receives SIGTERM', () => {
    expect(commands.length).toBeGreaterThan(0);
    expect(entrypoint).not.toMatch(/^\s+[a-z]+\) node /m);
  });
});
