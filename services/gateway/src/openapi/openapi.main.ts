import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiDocument } from './api-document';
import { documentText } from './document';

/** docs/openapi.json at the repository root (this file runs from services/gateway/dist/openapi). */
export const COMMITTED_DOCUMENT = join(__dirname, '..', '..', '..', '..', 'docs', 'openapi.json');

export const DRIFT_MESSAGE =
  'docs/openapi.json differs from the document the code generates: run `pnpm openapi` and commit docs/openapi.json.';

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
    process.stderr.write(`${DRIFT_MESSAGE}\n`);
    process.exitCode = 1;
    return;
  }
  process.stdout.write('docs/openapi.json is up to date\n');
}

if (require.main === module) main(process.argv.slice(2));
