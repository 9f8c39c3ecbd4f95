// Programmatic access for tests and tooling (benchmark, e2e seeding): the same rules as the CLI.
export * from './result';
export * from './deps';
export * from './config';
export * from './apps/app-rules';
export * from './apps/apps.repository';
export * from './apps/app-admin.service';
export * from './keys/key-admin.repository';
export * from './keys/key-admin.service';
