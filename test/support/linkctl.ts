import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { repositoryRoot } from './service-process';
import type { Stack } from './stack';

const run = promisify(execFile);

/**
 * The operator CLI as built (`pnpm linkctl` minus its rebuild) with `--json`, as an operator of
 * `stack` runs it: the stack's database, Redis (or Redis Cluster), namespace and link domain. Fails on any
 * output to stderr; answers the one JSON document it printed.
 */
export async function stackLinkctl(stack: Stack, ...args: string[]): Promise<unknown> {
  const { stdout, stderr } = await run(
    process.execPath,
    [join(repositoryRoot(), 'services', 'linkctl', 'dist', 'main.js'), ...args, '--json'],
    {
      env: {
        PATH: process.env.PATH ?? '',
        ...stack.connectionEnv,
        REDIS_PREFIX: stack.redisPrefix,
        LINK_DOMAIN: stack.linkDomain,
      },
      timeout: 15_000,
    },
  );
  if (stderr !== '') throw new Error(`linkctl ${args.join(' ')} wrote to stderr: ${stderr}`);
  return JSON.parse(stdout);
}

export interface LinkctlApp {
  subdomainKey: string;
  app: { id: string; linkHost: string };
}

/** `linkctl app create` on `stack` for an app named `name`, on a new subdomain `<prefix>-<hex>`. */
export async function createAppWithLinkctl(
  stack: Stack,
  name: string,
  subdomainPrefix: string,
): Promise<LinkctlApp> {
  const subdomainKey = `${subdomainPrefix}-${randomBytes(4).toString('hex')}`;
  const created = (await stackLinkctl(
    stack,
    'app',
    'create',
    '--name',
    name,
    '--subdomain',
    subdomainKey,
  )) as { app: LinkctlApp['app'] };
  return { subdomainKey, app: created.app };
}
