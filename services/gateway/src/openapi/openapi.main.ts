import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { apiDocument } from './api-document';
import { documentText } from './document';
import { absolutePath, packageValuesFiles } from './package-values';

/** docs/openapi.json at the repository root (this file runs from services/gateway/dist/openapi). */
export const COMMITTED_DOCUMENT = join(__dirname, '..', '..', '..', '..', 'docs', 'openapi.json');

export const DRIFT_MESSAGE =
  'docs/openapi.json or a package file generated from it differs from what the code generates: run `pnpm openapi` and commit them.';

/** Where two texts first differ, for people: the line number and both versions of that line. */
export function firstDifference(committed: string, generated: string): string {
  const was = committed.split('\n');
  const now = generated.split('\n');
  const line = now.findIndex((text, index) => was[index] !== text);
  const at = line === -1 ? now.length : line;
  return `first difference at line ${at + 1}:\n  committed: ${was[at] ?? '(end of file)'}\n  generated: ${now[at] ?? '(end of file)'}`;
}

function readOrUndefined(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * `pnpm openapi` writes docs/openapi.json and the packages' values generated from it;
 * `pnpm openapi:check` (`--check`) fails when any of them drifted.
 */
function main(args: readonly string[]): void {
  const document = apiDocument();
  const outputs = [
    { path: COMMITTED_DOCUMENT, name: 'docs/openapi.json', text: documentText(document) },
    ...packageValuesFiles(document).map((file) => ({
      path: absolutePath(file),
      name: file.path,
      text: file.text,
    })),
  ];
  if (!args.includes('--check')) {
    for (const { path, text } of outputs) {
      writeFileSync(path, text);
      process.stdout.write(`wrote ${path}\n`);
    }
    return;
  }
  for (const { path, name, text } of outputs) {
    const committed = readOrUndefined(path);
    if (committed !== text) {
      process.stderr.write(
        `${DRIFT_MESSAGE}\n${name}: ${committed === undefined ? 'missing' : firstDifference(committed, text)}\n`,
      );
      process.exitCode = 1;
      return;
    }
  }
  process.stdout.write(`${outputs.map(({ name }) => name).join(', ')}: up to date\n`);
}

if (require.main === module) main(process.argv.slice(2));
