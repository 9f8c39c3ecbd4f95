import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiDocument } from './api-document';
import { documentText } from './document';

/** docs/openapi.json at the repository root (this file runs from services/gateway/dist/openapi). */
export const COMMITTED_DOCUMENT = join(__dirname, '..', '..', '..', '..', 'docs', 'openapi.json');

export const DRIFT_MESSAGE =
  'docs/openapi.json differs from the document the code generates: run `pnpm openapi` and commit docs/openapi.json.';

/** Where two texts first differ, for people: the line number and both versions of that line. */
export function firstDifference(committed: string, generated: string): string {
  const was = committed.split('\n');
  const now = generated.split('\n');
  const line = now.findIndex((text, index) => was[index] !== text);
  const at = line === -1 ? now.length : line;
  return `first difference at line ${at + 1}:\n  committed: ${was[at] ?? '(end of file)'}\n  generated: ${now[at] ?? '(end of file)'}`;
}

/** `pnpm openapi` writes the file; `pnpm openapi:check` (`--check`) fails when it drifted. */
function main(args: readonly string[]): void {
  const generated = documentText(apiDocument());
  if (!args.includes('--check')) {
    writeFileSync(COMMITTED_DOCUMENT, generated);
    process.stdout.write(`wrote ${COMMITTED_DOCUMENT}\n`);
    return;
  }
  let committed: string | undefined;
  try {
    committed = readFileSync(COMMITTED_DOCUMENT, 'utf8');
  } catch {
    committed = undefined;
  }
  if (committed !== generated) {
    process.stderr.write(
      `${DRIFT_MESSAGE}\n${committed === undefined ? 'docs/openapi.json is missing' : firstDifference(committed, generated)}\n`,
    );
    process.exitCode = 1;
    return;
  }
  process.stdout.write('docs/openapi.json is up to date\n');
}

if (require.main === module) main(process.argv.slice(2));
