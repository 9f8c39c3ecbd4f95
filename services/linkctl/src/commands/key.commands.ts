import type { Command } from 'commander';
import { Option } from 'commander';
import type { Environment, KeyType } from '@linkservice/db';
import type { ApiKeyView } from '../keys/key-admin.service';
import type { RunAction } from './command';
import { refuse, succeed } from './command';

export function registerKeyCommands(program: Command, run: RunAction): void {
  const key = program
    .command('key')
    .description('create, revoke and list keys (secret and publishable)');

  key
    .command('create')
    .description('create a key (secret by default); its text is printed once and never stored')
    .requiredOption('--app <appId>', 'id of the app the key belongs to (app_...)')
    .addOption(
      new Option('--env <environment>', 'environment the key works in')
        .choices(['live', 'test'])
        .makeOptionMandatory(),
    )
    .addOption(
      new Option(
        '--type <type>',
        'secret: the server API; publishable: only the app interface (/api/v1/sdk), for apps',
      )
        .choices(['secret', 'publishable'])
        .default('secret'),
    )
    .action((options: { app: string; env: Environment; type: KeyType }, command: Command) =>
      run(command, async ({ keys }) => {
        const created = await keys.createKey({
          appId: options.app,
          environment: options.env,
          type: options.type,
        });
        if (!created.ok) return refuse(created.error.message);
        const { key: view, secret } = created.value;
        const { id, appId, environment, type, createdAt } = view;
        return succeed(
          { key: { id, appId, environment, type, createdAt }, secret },
          [
            `Created ${environment} ${type} key ${id} for app ${appId} at ${createdAt}`,
            `${type === 'secret' ? 'Secret' : 'Publishable'} key, shown only this once (only its hash is stored):`,
            `  ${secret}`,
          ].join('\n'),
        );
      }),
    );

  key
    .command('revoke')
    .description('revoke a key at once; revoking a revoked key changes nothing')
    .argument('<keyId>', 'id of the key (key_...)')
    .action((keyId: string, _options: unknown, command: Command) =>
      run(command, async ({ keys, linkHostCache }) => {
        const revoked = await keys.revokeKey(keyId);
        if (!revoked.ok) return refuse(revoked.error.message);
        const { key: view, alreadyRevoked, walPosition } = revoked.value;
        const when = view.revokedAt ?? '';
        const what = `${view.id} (${view.environment} ${view.type}, app ${view.appId})`;
        // GET by id and resolve check the key on the replica when there is one: the fence
        // makes them ask the primary until the replica has the revocation.
        const fenced =
          walPosition === undefined
            ? { ok: true as const }
            : await linkHostCache.raiseWriteFence(
                { appId: view.appId, environment: view.environment },
                walPosition,
              );
        return succeed(
          { key: view },
          alreadyRevoked
            ? `Key ${what} was already revoked at ${when}`
            : `Revoked key ${what} at ${when}`,
          fenced.ok
            ? undefined
            : [
                `the app's write fence was not raised (${fenced.reason}); services reading from ` +
                  'a replica (DATABASE_READ_URL) may accept the key until the replica has ' +
                  'applied the revocation (its lag)',
              ],
        );
      }),
    );

  key
    .command('list')
    .description("list an app's keys, oldest first (never their secrets)")
    .requiredOption('--app <appId>', 'id of the app (app_...)')
    .action((options: { app: string }, command: Command) =>
      run(command, async ({ keys }) => {
        const listed = await keys.listKeys(options.app);
        if (!listed.ok) return refuse(listed.error.message);
        return succeed({ keys: listed.value }, describeKeys(options.app, listed.value));
      }),
    );
}

function describeKeys(appId: string, keys: ApiKeyView[]): string {
  if (keys.length === 0) return `App ${appId} has no keys`;
  const lines = keys.map(
    (key) =>
      `  ${key.id}  ${key.environment}  ${key.type.padEnd(11)}  created ${key.createdAt}  ` +
      (key.revokedAt ? `revoked ${key.revokedAt}` : 'active'),
  );
  return [`${keys.length} key${keys.length === 1 ? '' : 's'} of app ${appId}:`, ...lines].join(
    '\n',
  );
}
