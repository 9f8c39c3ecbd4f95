import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const root = path.resolve(__dirname, '../..');

/**
 * Loads each service's config with its own loader (compiled `services/<name>/dist/config.js`,
 * built by `tsc -b` before jest runs) in a child process, so deployment files are checked
 * against the real zod schemas without importing service code into the test project.
 */
const LOAD_SERVICE_CONFIGS = `
const path = require('node:path');
const [root, json] = process.argv.slice(1);
const results = {};
for (const [component, env] of Object.entries(JSON.parse(json))) {
  const config = require(path.join(root, 'services', component, 'dist', 'config.js'));
  const schema = Object.entries(config).find(([name]) => name.endsWith('EnvSchema'))[1];
  const known = Object.keys(schema.shape);
  try {
    results[component] = { known, parsed: config.loadConfig(env) };
  } catch (error) {
    results[component] = { known, problem: error.message };
  }
}
process.stdout.write(JSON.stringify(results));
`;

export interface ServiceConfigResult {
  /** Every variable the service's schema reads. */
  known: string[];
  /** The parsed config, when the environment was accepted. */
  parsed?: Record<string, unknown>;
  /** The service's ConfigError message, when it was not. */
  problem?: string;
}

export async function loadServiceConfigs(
  envByComponent: Record<string, Record<string, string>>,
): Promise<Record<string, ServiceConfigResult>> {
  const { stdout } = await execFileAsync(process.execPath, [
    '--eval',
    LOAD_SERVICE_CONFIGS,
    root,
    JSON.stringify(envByComponent),
  ]);
  return JSON.parse(stdout) as Record<string, ServiceConfigResult>;
}
