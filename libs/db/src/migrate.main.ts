import { baseEnvSchema, loadOrExit, parseEnv } from '@linkservice/config';
import { migrateToLatest } from './migrate';

const config = loadOrExit(() => parseEnv(baseEnvSchema.pick({ DATABASE_URL: true }), process.env));

migrateToLatest(config.DATABASE_URL).then(
  ({ databaseCreated, applied }) => {
    if (databaseCreated) process.stdout.write('migrate: created the database\n');
    process.stdout.write(
      applied.length ? `migrate: applied ${applied.join(', ')}\n` : 'migrate: up to date\n',
    );
  },
  (error: unknown) => {
    process.stderr.write(`migrate: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
