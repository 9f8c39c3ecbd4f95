import type { Command } from 'commander';
import { migrateToLatest } from '@linkservice/db';
import type { RunAction } from './command';
import { succeed } from './command';

export function registerMigrateCommand(program: Command, run: RunAction): void {
  program
    .command('migrate')
    .description('apply pending database migrations, creating the database when it is missing')
    .action((_options: unknown, command: Command) =>
      run(command, async ({ config }) => {
        const { databaseCreated, applied } = await migrateToLatest(config.DATABASE_URL);
        const database = databaseName(config.DATABASE_URL);
        const lines = databaseCreated ? [`Created database ${database}`] : [];
        lines.push(
          applied.length
            ? `Applied ${applied.length} migration${applied.length === 1 ? '' : 's'} to ${database}: ${applied.join(', ')}`
            : `Database ${database} is up to date`,
        );
        return succeed({ databaseCreated, applied }, lines.join('\n'));
      }),
    );
}

/** Just the name: the URL may hold a password. */
function databaseName(databaseUrl: string): string {
  return decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
}
