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
import { createLinkctlServices } from './deps';

/** 1: refused or failed; 2: the command line is wrong; 78 (EX_CONFIG): bad environment. */
export const EXIT_DONE = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_CONFIG = 78;

/** Where one run of linkctl reads its environment and writes its output. */
export interface CliIo {
  env: Record<string, string | undefined>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

/** One line, whatever the text holds, so scripts can read it as such. */
function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ');
}

/**
 * One linkctl run: parses `args` (without `node main.js`), runs the command and answers the
 * exit code. Everything the run touches comes from `io`, so main.ts runs it for the process and
 * tests run it in theirs, concurrently if they like.
 */
export async function runCli(args: string[], io: CliIo): Promise<number> {
  let exitCode = EXIT_DONE;
  const fail = (reason: string, code: number): void => {
    io.stderr(`linkctl: ${oneLine(reason)}\n`);
    exitCode = code;
  };

  const runAction: RunAction = async (command: Command, action: CommandAction) => {
    const { json = false } = command.optsWithGlobals<{ json?: boolean }>();
    let config: LinkctlConfig | undefined;
    let handle: DbHandle | undefined;
    let linkHostCache: LinkHostCache | undefined;
    try {
      config = loadConfig(io.env);
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
      io.stdout(`${json ? JSON.stringify(result.output.json) : result.output.text}\n`);
      for (const warning of result.output.warnings ?? []) {
        io.stderr(`linkctl: warning: ${oneLine(warning)}\n`);
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

  const helpForErrors: string[] = [];
  try {
    await createProgram(runAction, io, helpForErrors).parseAsync(args, { from: 'user' });
  } catch (error) {
    if (!(error instanceof CommanderError)) {
      fail(describeFailure(error), EXIT_FAILED);
    } else if (error.exitCode !== 0) {
      // --help and --version end here too, with exit code 0 and their text on stdout.
      fail(usageReason(error, helpForErrors), EXIT_USAGE);
    }
  }
  return exitCode;
}

function createProgram(run: RunAction, io: CliIo, helpForErrors: string[]): Command {
  const program = new Command('linkctl')
    .description(
      'Operator CLI of linkservice: apps (plan, iOS and Android settings), keys (secret and ' +
        'publishable) and database migrations.',
    )
    .option('--json', 'print exactly one JSON document on stdout')
    .configureHelp({ showGlobalOptions: true })
    // Settings before .command(): subcommands copy them when created. Errors are printed by
    // runCli as one line, so commander prints none itself.
    .exitOverride()
    .configureOutput({
      writeOut: io.stdout,
      outputError: () => undefined,
      writeErr: (text) => helpForErrors.push(text),
      // Help as a terminal of 80 columns shows it, wherever it is printed (README, a pipe).
      getOutHelpWidth: () => 80,
      getErrHelpWidth: () => 80,
    });
  registerAppCommands(program, run);
  registerKeyCommands(program, run);
  registerMigrateCommand(program, run);
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
