import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import type { AppAdminView } from '../apps/app-admin.service';
import { LINK_ALLOWANCE_MAX } from '../apps/app-rules';
import { registerAppAssociationCommands } from './app-association.commands';
import type { RegisterSubcommand, RunAction } from './command';
import { refuse, succeed } from './command';

/**
 * Every `app` subcommand, in help order. A new one is a file exporting a RegisterSubcommand and
 * one line here.
 */
const APP_SUBCOMMANDS: RegisterSubcommand[] = [
  registerAppCreate,
  registerAppSetAllowance,
  registerAppAssociationCommands,
];

export function registerAppCommands(program: Command, run: RunAction): void {
  const app = program
    .command('app')
    .description('create apps; set their plan and the iOS and Android apps of their links');
  for (const register of APP_SUBCOMMANDS) register(app, run);
}

function registerAppCreate(app: Command, run: RunAction): void {
  app
    .command('create')
    .description('create an app; prints its id and link host')
    .requiredOption('--name <name>', 'display name (1-100 characters)')
    .option(
      '--subdomain <key>',
      'subdomain key of its link host (3-63 of a-z 0-9 -); derived from the name when omitted',
    )
    .option(
      '--link-allowance <n>',
      'most links the app may hold, both environments, archived included; none (the default) means unlimited',
      parseLinkAllowanceOption,
    )
    .action(
      (
        options: { name: string; subdomain?: string; linkAllowance?: number | typeof UNLIMITED },
        command: Command,
      ) =>
        run(command, async ({ apps }) => {
          const created = await apps.createApp({
            name: options.name,
            subdomainKey: options.subdomain,
            linkAllowance: options.linkAllowance === UNLIMITED ? null : options.linkAllowance,
          });
          if (!created.ok) return refuse(created.error.message);
          return succeed({ app: created.value }, describeApp('Created app', created.value));
        }),
    );
}

function registerAppSetAllowance(app: Command, run: RunAction): void {
  app
    .command('set-allowance')
    .description("set an app's plan link allowance; none means unlimited")
    .argument('<appId>', 'id of the app (app_...)')
    .argument('<n|none>', 'most links the app may hold, or none', parseLinkAllowance)
    .action((appId: string, allowance: number | null, _options: unknown, command: Command) =>
      run(command, async ({ apps }) => {
        const updated = await apps.setLinkAllowance(appId, allowance);
        if (!updated.ok) return refuse(updated.error.message);
        return succeed({ app: updated.value }, describeApp('Updated app', updated.value));
      }),
    );
}

/** `none` (unlimited) or a whole number; anything else is a usage error before any I/O. */
export function parseLinkAllowance(value: string): number | null {
  if (value === 'none') return null;
  if (!/^\d+$/.test(value)) {
    throw new InvalidArgumentError('Expected a whole number or none.');
  }
  const allowance = Number(value);
  if (allowance > LINK_ALLOWANCE_MAX) {
    throw new InvalidArgumentError(`The largest allowance is ${LINK_ALLOWANCE_MAX}.`);
  }
  return allowance;
}

/**
 * How an option carries `none` to its action: Commander stores '' for an option whose parser
 * returns null, which the allowance rules would then refuse as not a whole number.
 */
const UNLIMITED = 'none';

function parseLinkAllowanceOption(value: string): number | typeof UNLIMITED {
  return parseLinkAllowance(value) ?? UNLIMITED;
}

/** The human summary shared by every command that prints an app. */
export function describeApp(heading: string, app: AppAdminView): string {
  return [
    `${heading} ${app.id}`,
    `  name            ${app.name}`,
    `  subdomain key   ${app.subdomainKey}`,
    `  link host       ${app.linkHost}`,
    `  link allowance  ${app.linkAllowance === null ? 'unlimited' : String(app.linkAllowance)}`,
  ].join('\n');
}
