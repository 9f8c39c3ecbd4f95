import type { Command } from 'commander';
import type { LinkctlConfig } from '../config';
import type { LinkHostCache } from '../link-host-cache';
import type { LinkctlServices } from '../deps';

/** What a command produced: the `--json` document and the human summary of the same thing. */
export interface CommandOutput {
  json: unknown;
  text: string;
  /**
   * Done, with a caveat the operator must see (the link host's cache could not be cleared):
   * one `linkctl: warning: <warning>` line each on stderr, whatever `--json` says.
   */
  warnings?: string[];
}

/** A refused command is a value: its reason becomes the single `linkctl: <reason>` line. */
export type CommandResult = { ok: true; output: CommandOutput } | { ok: false; reason: string };

/** The services come from deps.ts (linkctl's one composition root), built by runCli (cli.ts). */
export interface CommandContext extends LinkctlServices {
  config: LinkctlConfig;
  /** Opens Redis on first use only. */
  linkHostCache: LinkHostCache;
}

export type CommandAction = (context: CommandContext) => Promise<CommandResult>;

/**
 * Runs one command's work: runCli (cli.ts) supplies it. It loads the configuration, opens the database
 * lazily, prints the output in the mode `--json` asked for, and turns a refusal or an error
 * into one stderr line and a non-zero exit code.
 */
export type RunAction = (command: Command, action: CommandAction) => Promise<void>;

/** Registers one subcommand under a parent (e.g. `create` under `app`). */
export type RegisterSubcommand = (parent: Command, run: RunAction) => void;

export function succeed(json: unknown, text: string, warnings?: string[]): CommandResult {
  return { ok: true, output: { json, text, ...(warnings ? { warnings } : {}) } };
}

export function refuse(reason: string): CommandResult {
  return { ok: false, reason };
}
