const { readdirSync } = require('node:fs');
const path = require('node:path');

/**
 * Three tiers, one jest project each, told apart by the file name:
 * - unit: `*.unit.test.ts`, no I/O at all (no Postgres, Redis, Docker, child process or socket);
 *   passes with both databases unreachable, so it gets no global setup.
 * - integration: `*.integration.test.ts`, real Postgres and Redis, services in this process
 *   (and the chart tests, which run helm).
 * - e2e: `*.e2e.test.ts`, spawned processes: the compiled services, linkctl, the started stack.
 * - container: `*.container.test.ts`, the built image run by a container engine (compose file,
 *   hardening, Node version, SIGTERM drain); only `pnpm test:containers` runs it (CI builds the
 *   image first), as it needs an engine and an image.
 * - faults: `*.faults.test.ts`, the compiled stack against a Postgres cluster and a Redis of the
 *   suite's own, frozen, stopped and killed under load (test/faults); only `pnpm test:faults`
 *   runs it, as it needs the Postgres server binaries, redis-server and root (a few minutes).
 * - replicas: `*.replicas.test.ts`, two of each compiled service on one database and Redis
 *   namespace of the suite's own under mixed load (test/replicas); only `pnpm test:replicas`
 *   runs it, as it starts six processes on a machine the other tiers already keep busy.
 * - read-replica: `*.read-replica.test.ts`, the compiled stack behind PgBouncer in transaction mode with a
 *   streaming replica applying 2 s late, all of the suite's own (test/read-replica); only
 *   `pnpm test:read-replica` runs it, as it needs the Postgres server binaries, pgbouncer and root.
 * - cluster: `*.cluster.test.ts`, the compiled stack on a Redis Cluster the suite starts itself
 *   (three masters, three replicas, spare ports; test/cluster): the journeys, then a master
 *   killed under load; only `pnpm test:cluster` runs it, as it needs redis-server and redis-cli.
 * `pnpm test` runs the first three; `pnpm test:unit` and friends run one (`--selectProjects`).
 */
const TIERS = [
  'unit',
  'integration',
  'e2e',
  'container',
  'faults',
  'replicas',
  'read-replica',
  'cluster',
];
const ROOTS = ['libs', 'services', 'test'];

/**
 * Packages that ship only ESM (kysely from 0.29). Node 24 loads them with require(esm), but
 * jest's own module loader can only do that behind --experimental-vm-modules, so jest compiles
 * them to CommonJS like our sources.
 */
const ESM_ONLY_PACKAGES = [
  'kysely',
  // The OpenAPI 3.1 validator of the document's test; pnpm's store writes its scope `@seriousme+`.
  '@seriousme[+/]openapi-schema-validator',
];

/** @type {import('jest').Config['transform']} */
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
  ],
  '^.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
};

/** node_modules stays untransformed, except the ESM-only packages (pnpm's and hoisted paths). */
const transformIgnorePatterns = [
  `/node_modules/(?!(\\.pnpm/)?(${ESM_ONLY_PACKAGES.join('|')})[@/])`,
];

/** @type {import('jest').Config} */
const shared = {
  rootDir: __dirname,
  testEnvironment: 'node',
  transform,
  transformIgnorePatterns,
  moduleNameMapper: {
    // Services' in-process harnesses (e.g. a gateway test running the worker), then libs.
    '^@linkservice/(gateway|worker|redirect)$': '<rootDir>/services/$1/src',
    '^@linkservice/([a-z-]+)$': '<rootDir>/libs/$1/src',
  },
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  testTimeout: 30000,
};

/** Both tiers that talk to Postgres and Redis share one per-run database and Redis prefix. */
const runEnvironment = {
  globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.ts',
};

function project(tier, extra = {}) {
  return {
    ...shared,
    displayName: tier,
    testMatch: [`<rootDir>/{${ROOTS.join(',')}}/**/*.${tier}.test.ts`],
    ...extra,
  };
}

/** A test file without a tier in its name would silently never run: refuse it instead. */
function refuseUntieredTests() {
  const untiered = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules' || entry.name === 'dist') continue;
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (
        entry.name.endsWith('.test.ts') &&
        !TIERS.some((tier) => entry.name.endsWith(`.${tier}.test.ts`))
      ) {
        untiered.push(path.relative(__dirname, full));
      }
    }
  };
  for (const root of ROOTS) walk(path.join(__dirname, root));
  if (untiered.length > 0) {
    throw new Error(
      `name the tier of these tests (*.unit, *.integration, *.e2e, *.container, *.faults, *.replicas, *.read-replica or *.cluster .test.ts): ${untiered.join(', ')}`,
    );
  }
}

refuseUntieredTests();

/** @type {import('jest').Config} */
module.exports = {
  projects: [
    project('unit', { setupFilesAfterEnv: ['<rootDir>/libs/testing/src/unit-setup.ts'] }),
    project('integration', runEnvironment),
    project('e2e', runEnvironment),
    project('container'),
    // No run environment: the suite makes its own database and Redis.
    project('faults'),
    // No run environment either: the suite makes its own database and Redis prefix.
    project('replicas'),
    // Same: its own primary, replica and PgBouncer; Redis under its own prefix.
    project('read-replica'),
    // Nor this one: the suite makes its own database and Redis Cluster.
    project('cluster'),
  ],
  testTimeout: 30000,
  maxWorkers: 2,
};
