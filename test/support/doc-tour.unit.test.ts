import { outputMatches, outputsByStep, tourScript, tourSteps } from './doc-tour';

const DOC = [
  '# Title',
  '```sh',
  'echo not a tour',
  '```',
  '```sh tour',
  '# prose before the first command',
  'APP=$(echo app_1)',
  'curl -s localhost:8080/x \\',
  '  -H "a: b"',
  '# {"id":"lnk_…"}',
  '#',
  '# second line',
  '',
  'echo "$APP"   # a trailing comment is part of the command',
  '```',
].join('\n');

describe('tourSteps', () => {
  it('reads only `sh tour` blocks, joins continued lines and keeps the shown output', () => {
    expect(tourSteps('README.md', DOC)).toEqual([
      { source: 'README.md', line: 7, command: 'APP=$(echo app_1)', expected: [] },
      {
        source: 'README.md',
        line: 8,
        command: 'curl -s localhost:8080/x \\\n  -H "a: b"',
        expected: ['{"id":"lnk_…"}', '', 'second line'],
      },
      {
        source: 'README.md',
        line: 14,
        command: 'echo "$APP"   # a trailing comment is part of the command',
        expected: [],
      },
    ]);
  });

  it('refuses a block left open or ending inside a command', () => {
    expect(() => tourSteps('a.md', '```sh tour\necho 1\n')).toThrow('never closed');
    expect(() => tourSteps('a.md', '```sh tour\necho 1 \\\n```\n')).toThrow('inside a command');
  });
});

describe('outputMatches', () => {
  it('matches `…` with any text, the rest literally', () => {
    expect(outputMatches(['{"id":"lnk_…","n":1}'], '{"id":"lnk_01ABC","n":1}')).toBe(true);
    expect(outputMatches(['{"id":"lnk_…","n":1}'], '{"id":"lnk_01ABC","n":2}')).toBe(false);
    expect(outputMatches(['a.c'], 'abc')).toBe(false);
    expect(outputMatches(['302 https://x.example/?q=1'], '302 https://x.example/?q=1\n')).toBe(
      true,
    );
  });

  it('compares every line, with CRLF read as LF', () => {
    expect(
      outputMatches(
        ['HTTP/1.1 201 …', 'Idempotent-Replayed: true'],
        'HTTP/1.1 201 Created\r\nIdempotent-Replayed: true\r\n',
      ),
    ).toBe(true);
    expect(outputMatches(['one'], 'one\ntwo')).toBe(false);
  });
});

describe('tourScript and outputsByStep', () => {
  it('announce each step so its output can be told apart, including output without a newline', () => {
    const steps = tourSteps('a.md', '```sh tour\necho one\nprintf two\n```\n');
    const script = tourScript(steps);
    expect(script.startsWith('set -euo pipefail\n')).toBe(true);
    expect(outputsByStep('\n@@tour-step 0\none\n\n@@tour-step 1\ntwo')).toEqual(
      new Map([
        [0, 'one\n'],
        [1, 'two'],
      ]),
    );
  });
});
