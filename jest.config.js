/** @type {import('jest').Config} */
const swc = [
  '@swc/jest',
  { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } },
];

module.exports = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': swc },
  moduleNameMapper: {
    // Services' in-process harnesses (e.g. a gateway test running the worker), then libs.
    '^@linkservice/(gateway|worker|redirect)$': '<rootDir>/services/$1/src',
    '^@linkservice/([a-z-]+)$': '<rootDir>/libs/$1/src',
  },
  testMatch: ['<rootDir>/{libs,services,test}/**/*.test.ts'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  globalSetup: '<rootDir>/libs/testing/src/global-setup.ts',
  globalTeardown: '<rootDir>/libs/testing/src/global-teardown.ts',
  testTimeout: 30000,
  maxWorkers: 2,
};
