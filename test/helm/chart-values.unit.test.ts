import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { parse } from 'yaml';

/** The chart's values and their documentation, read as files: no helm run needed. */

const chartDir = path.resolve(__dirname, '../../helm/linkservice');

describe('values documentation', () => {
  /** Dotted paths of the values a user sets: scalars, lists and empty maps. */
  function leafPaths(value: unknown, prefix = ''): string[] {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return [prefix];
    const entries = Object.entries(value);
    if (entries.length === 0) return [prefix];
    return entries.flatMap(([key, child]) => leafPaths(child, prefix ? `${prefix}.${key}` : key));
  }

  it('documents every value in values.yaml with a ## @param line, and no other', async () => {
    const text = await readFile(path.join(chartDir, 'values.yaml'), 'utf8');
    const documented = [...text.matchAll(/^\s*## @param (\S+) \S/gm)].map((match) => match[1]);
    expect(documented.sort()).toEqual(leafPaths(parse(text)).sort());
  });

  it('lists every value in the README parameter tables', async () => {
    const [values, readme] = await Promise.all([
      readFile(path.join(chartDir, 'values.yaml'), 'utf8'),
      readFile(path.join(chartDir, 'README.md'), 'utf8'),
    ]);
    const missing = leafPaths(parse(values)).filter((key) => !readme.includes(`| \`${key}\``));
    expect(missing).toEqual([]);
  });
});
