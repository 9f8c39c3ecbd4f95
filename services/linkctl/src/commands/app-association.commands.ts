import type { Command } from 'commander';
import { Option } from 'commander';
import type { Environment } from '@linkservice/db';
import type {
  AssociationsFailure,
  AssociationView,
} from '../associations/association-admin.service';
import type { LinkHostCache } from '../link-host-cache';
import type { Result } from '../result';
import type { CommandResult, RunAction } from './command';
import { refuse, succeed } from './command';

/**
 * `app set-ios`, `app set-android` and their `unset-` counterparts: what the link host serves at
 * /.well-known/apple-app-site-association and /.well-known/assetlinks.json, per environment,
 * and whether it serves the iOS deferred page (set-ios --deferred-page).
 */
export function registerAppAssociationCommands(app: Command, run: RunAction): void {
  app
    .command('set-ios')
    .description("set the iOS app that opens the app's links (apple-app-site-association)")
    .argument('<appId>', 'id of the app (app_...)')
    .requiredOption('--team-id <id>', 'Apple Team ID (10 letters or digits)')
    .requiredOption('--bundle-id <id>', 'bundle ID, reverse-DNS (com.example.app)')
    .addOption(environmentOption())
    .addOption(
      new Option(
        '--deferred-page <state>',
        'serve the "Get the app" page (deferred deep linking) instead of redirecting iOS to a ' +
          "link's iOS fallback; omitted: unchanged (off for a new setting)",
      ).choices(['on', 'off']),
    )
    .action(
      (
        appId: string,
        options: {
          teamId: string;
          bundleId: string;
          env: Environment;
          deferredPage?: 'on' | 'off';
        },
        command: Command,
      ) =>
        run(command, async ({ associations, linkHostCache }) => {
          const result = await associations.setIos(appId, options.env, {
            teamId: options.teamId,
            bundleId: options.bundleId,
            deferredPage:
              options.deferredPage === undefined ? undefined : options.deferredPage === 'on',
          });
          return withLinkHostCacheCleared(result, linkHostCache);
        }),
    );

  app
    .command('set-android')
    .description("set the Android app that opens the app's links (assetlinks.json)")
    .argument('<appId>', 'id of the app (app_...)')
    .requiredOption('--package <name>', 'application id (com.example.app)')
    .requiredOption(
      '--sha256 <fingerprint>',
      'SHA-256 signing certificate fingerprint, 32 colon-separated hex bytes; repeat for several',
      (value: string, previous: string[] | undefined) => [...(previous ?? []), value],
    )
    .addOption(environmentOption())
    .action(
      (
        appId: string,
        options: { package: string; sha256: string[]; env: Environment },
        command: Command,
      ) =>
        run(command, async ({ associations }) => {
          const result = await associations.setAndroid(appId, options.env, {
            packageName: options.package,
            sha256Fingerprints: options.sha256,
          });
          return associationOutput(result);
        }),
    );

  app
    .command('unset-ios')
    .description('stop serving apple-app-site-association; keeps the Android settings')
    .argument('<appId>', 'id of the app (app_...)')
    .addOption(environmentOption())
    .action((appId: string, options: { env: Environment }, command: Command) =>
      run(command, async ({ associations, linkHostCache }) => {
        const result = await associations.unsetIos(appId, options.env);
        return withLinkHostCacheCleared(result, linkHostCache);
      }),
    );

  app
    .command('unset-android')
    .description('stop serving assetlinks.json; keeps the iOS settings')
    .argument('<appId>', 'id of the app (app_...)')
    .addOption(environmentOption())
    .action((appId: string, options: { env: Environment }, command: Command) =>
      run(command, async ({ associations }) => {
        const result = await associations.unsetAndroid(appId, options.env);
        return associationOutput(result);
      }),
    );
}

function environmentOption(): Option {
  return new Option('--env <environment>', 'which link host serves it')
    .choices(['live', 'test'])
    .default('live');
}

/**
 * The link host's cached resolutions carry the deferred-page setting of their app and
 * environment, so set-ios and unset-ios clear them once committed. The association files need
 * nothing: the link host reads them from Postgres on every request. Redis away is a warning:
 * the change is committed, and the cache lets go of the old setting by itself.
 */
async function withLinkHostCacheCleared(
  result: Result<AssociationView, AssociationsFailure>,
  linkHostCache: LinkHostCache,
): Promise<CommandResult> {
  if (!result.ok) return associationOutput(result);
  const { app, association } = result.value;
  const cleared = await linkHostCache.invalidateHost({
    subdomainKey: app.subdomainKey,
    environment: association.environment,
  });
  return succeed(
    result.value,
    describeAssociation(result.value),
    cleared.ok
      ? undefined
      : [
          `the link host's cache was not cleared (${cleared.reason}); ${association.linkHost} ` +
            'may serve the previous deferred-page setting for up to LINK_CACHE_TTL_SECONDS ' +
            '(300 s by default)',
        ],
  );
}

/** Every association command prints the same document: the settings as they now stand. */
function associationOutput(result: Result<AssociationView, AssociationsFailure>): CommandResult {
  if (!result.ok) return refuse(result.error.message);
  return succeed(result.value, describeAssociation(result.value));
}

function describeAssociation({ app, association }: AssociationView): string {
  const { ios, android } = association;
  return [
    `Updated app association of ${app.id} (${association.environment})`,
    `  link host     ${association.linkHost}`,
    `  iOS           ${ios ? ios.appId : 'not set'}`,
    ...(ios ? [`    deferred page ${ios.deferredPage ? 'on' : 'off'}`] : []),
    `  Android       ${android ? android.packageName : 'not set'}`,
    ...(android ? android.sha256Fingerprints.map((f) => `    sha256      ${f}`) : []),
  ].join('\n');
}
