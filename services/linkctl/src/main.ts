#!/usr/bin/env node
import { ConfigError } from '@linkservice/config';
import type { DbHandle } from '@linkservice/db';
import { createDb } from '@linkservice/db';
import { Command, CommanderError } from 'commander';
import { registerAppCommands } from './commands/app.commands';
import type { CommandAction, RunAction } from './commands/command';
import { registerKeyCommands } from './commands/key.commands';
import { registerMigrateCommand } from './commands/migrate.command';
import type { LinkctlConfig } from './config';
import { loadConfig } from './config';
import { describeFailure } from './failure-reason';
import { LinkHostCache } from './link-host-cache';
import { createLinkctlServices } from './services';

/** 1: refused or failed; 2: the command line is wrong; 78 (EX_CONFIG): bad environment. */
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;
const EXIT_CONFIG = 78;

/** One line, whatever the text holds, so scripts can read it as such. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

function fail(reason: string, exitCode: number): void {
  process.stderr.write(`linkctl: ${oneLine(reason)}\n`);
  process.exitCode = exitCode;
}

const runAction: RunAction = async (command: Command, action: CommandAction) => {
  const { json = false } = command.optsWithGlobals<{ json?: boolean }>();
  let config: LinkctlConfig | undefined;
  let handle: DbHandle | undefined;
  let linkHostCache: LinkHostCache | undefined;
  try {
    config = loadConfig();
    // pg connects on the first query, so commands that never query open no connection.
    handle = createDb({
      connectionString: config.DATABASE_URL,
      max: 2,
      applicationName: 'linkctl',
    });
    linkHostCache = new LinkHostCache(config);
    const services = createLinkctlServices(handle.db, { linkDomain: config.LINK_DOMAIN });
    const result = await action({ ...services, config, linkHostCache });
    if (!result.ok) {
      fail(result.reason, EXIT_FAILED);
      return;
    }
    process.stdout.write(`${json ? JSON.stringify(result.output.json) : result.output.text}\n`);
    for (const warning of result.output.warnings ?? []) {
      process.stderr.write(`linkctl: warning: ${oneLine(warning)}\n`);
    }
  } catch (error) {
    fail(
      describeFailure(error, config?.DATABASE_URL),
      error instanceof ConfigError ? EXIT_CONFIG : EXIT_FAILED,
    );
  } finally {
    linkHostCache?.close();
    await handle?.close().catch(() => undefined);
  }
};

function createProgram(helpForErrors: string[]): Command {
  const program = new Command('linkctl')
    .description('Operator CLI of linkservice: apps, secret keys and database migrations.')
    .option('--json', 'print exactly one JSON document on stdout')
    .configureHelp({ showGlobalOptions: true })
    // Settings before .command(): subcommands copy them when created. Errors are printed by
    // main() as one line, so commander prints none itself.
    .exitOverride()
    .configureOutput({
      outputError: () => undefined,
      writeErr: (text) => helpForErrors.push(text),
    });
  registerAppCommands(program, runAction);
  registerKeyCommands(program, runAction);
  registerMigrateCommand(program, runAction);
  return program;
}

/** Commander's own wording without its `error: ` prefix, on one line. */
function usageReason(error: CommanderError, helpForErrors: string[]): string {
  if (error.code === 'commander.help') {
    // A command that only groups subcommands was given none; commander wanted to show its help.
    const usage = /Usage: ([^\n[]+)/.exec(helpForErrors.join(''))?.[1]?.trim() ?? 'linkctl';
    return `missing command; see ${usage} --help`;
  }
  return error.message.replace(/^error: /, '');
}

async function main(): Promise<void> {
  const helpForErrors: string[] = [];
  try {
    await createProgram(helpForErrors).parseAsync(process.argv);
  } catch (error) {
    if (!(error instanceof CommanderError)) throw error;
    // --help and --version end here too, with exit code 0 and their text on stdout.
    if (error.exitCode === 0) return;
    fail(usageReason(error, helpForErrors), EXIT_USAGE);
  }
}

main().catch((error: unknown) => {
  fail(describeFailure(error), EXIT_FAILED);
});
