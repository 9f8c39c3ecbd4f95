import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';

/** The laptop stack of deploy/docker-compose.yml, as compose reads it (YAML merge keys on). */

export const REPO_ROOT = path.resolve(__dirname, '../..');

export interface ComposeService {
  image?: string;
  build?: { context: string; dockerfile: string };
  command?: string[];
  user?: string;
  read_only?: boolean;
  tmpfs?: string[];
  cap_drop?: string[];
  security_opt?: string[];
  environment?: Record<string, string>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  ports?: string[];
}

export const composeServices = (
  parse(readFileSync(path.join(REPO_ROOT, 'deploy/docker-compose.yml'), 'utf8'), {
    merge: true,
  }) as { services: Record<string, ComposeService> }
).services;

export const APP_SERVICES = ['migrate', 'gateway', 'worker', 'redirect'] as const;
export const LONG_RUNNING = ['gateway', 'worker', 'redirect'] as const;
