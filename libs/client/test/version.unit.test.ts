import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLIENT_VERSION } from '../src';

it('names the version package.json has (the User-Agent carries it)', () => {
  const manifest = JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as {
    version: string;
    dependencies: Record<string, string>;
  };
  expect(CLIENT_VERSION).toBe(manifest.version);
  // Published as is: fetch is the only thing it needs.
  expect(manifest.dependencies).toEqual({});
});
