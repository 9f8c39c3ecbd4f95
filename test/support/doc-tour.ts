/**
 * The copy-paste walkthroughs of README.md and docs/*.md, read as a test reads them: fenced blocks
 * whose info string is `sh tour`, in order. In such a block a line that does not start with `#`
 * begins a command (a trailing `\` continues it on the next line); the full-line comments right
 * after a command are the output the document shows for it, where `…` stands for any text.
 * Comments before a block's first command are prose. A command followed by no comment is run but
 * its output is not compared (it is not deterministic, or it prints nothing).
 */

export interface TourStep {
  /** The document it comes from, as given to `tourSteps`. */
  source: string;
  /** 1-based line of the command's first line in that document. */
  line: number;
  command: string;
  /** The output lines the document shows (without `# `); empty: not compared. */
  expected: string[];
}

const TOUR_FENCE = /^```sh tour\s*$/;
const FENCE_END = /^```\s*$/;
const ELLIPSIS = '…';

export function tourSteps(source: string, markdown: string): TourStep[] {
  const steps: TourStep[] = [];
  const lines = markdown.split('\n');
  let inTour = false;
  let current: TourStep | undefined;
  let continued = false;
  for (const [index, text] of lines.entries()) {
    if (!inTour) {
      inTour = TOUR_FENCE.test(text);
      current = undefined;
      continue;
    }
    if (FENCE_END.test(text)) {
      if (continued) throw new Error(`${source}:${index + 1}: the block ends inside a command`);
      inTour = false;
      continue;
    }
    if (continued && current) {
      current.command += `\n${text}`;
      continued = text.endsWith('\\');
      continue;
    }
    if (text.startsWith('#')) {
      if (current) current.expected.push(text.replace(/^# ?/, ''));
      continue;
    }
    if (text.trim() === '') continue;
    current = { source, line: index + 1, command: text, expected: [] };
    continued = text.endsWith('\\');
    steps.push(current);
  }
  if (inTour) throw new Error(`${source}: a \`sh tour\` block is never closed`);
  return steps;
}

/** True when `actual` (one command's whole output) is what `expected` shows, `…` matching any text. */
export function outputMatches(expected: readonly string[], actual: string): boolean {
  const pattern = expected
    .map((line) =>
      line
        .split(ELLIPSIS)
        .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
        .join('.*?'),
    )
    .join('\n');
  return new RegExp(`^${pattern}$`, 's').test(normaliseOutput(actual));
}

/** Line ends as a terminal shows them, no trailing blank lines (a JSON body has no final newline). */
export function normaliseOutput(output: string): string {
  return output.replace(/\r\n/g, '\n').replace(/\n+$/, '');
}

/** Prefix of the line a tour script prints before each step's command, followed by its index. */
export const STEP_MARKER = '@@tour-step ';

/**
 * One bash script running every step in order in one shell (variables carry over), stopping at
 * the first failing command, each step's output announced by a marker line.
 */
export function tourScript(steps: readonly TourStep[]): string {
  const body = steps.map(
    (step, index) => `printf '\\n${STEP_MARKER}%d\\n' ${index}\n${step.command}`,
  );
  return ['set -euo pipefail', ...body, ''].join('\n');
}

/** Each step's output from a tour script's stdout, by step index (steps not reached are absent). */
export function outputsByStep(stdout: string): Map<number, string> {
  const outputs = new Map<number, string>();
  const parts = stdout.split(new RegExp(`\\n${STEP_MARKER}(\\d+)\\n`));
  for (let i = 1; i < parts.length; i += 2) outputs.set(Number(parts[i]), parts[i + 1] ?? '');
  return outputs;
}
