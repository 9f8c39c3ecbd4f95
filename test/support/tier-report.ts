import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A tier's figures: printed, and written to `<dir>/results/<name>` (git-ignored) for the note
 * of the run. Resolves with the file written.
 */
export function writeTierReport(dir: string, table: string, name = 'last-run.md'): string {
  const results = join(dir, 'results');
  mkdirSync(results, { recursive: true });
  const file = join(results, name);
  writeFileSync(file, table);
  process.stdout.write(`\n${table}\nwritten to ${file}\n`);
  return file;
}
