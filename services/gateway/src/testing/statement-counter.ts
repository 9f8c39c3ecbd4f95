import type { Kysely, KyselyPlugin } from 'kysely';
import type { Database } from '@linkservice/db';

/**
 * Counts every statement a Kysely runs (prepared ones included), for the tests that hold a
 * route to its round trips. Pass `countingDeps` as startGateway's `deps`, set `count` to 0
 * before the request, read it after.
 */
export class StatementCounter {
  count = 0;

  private readonly plugin: KyselyPlugin = {
    transformQuery: (args) => args.node,
    transformResult: (args) => {
      this.count++;
      return Promise.resolve(args.result);
    },
  };

  /** startGateway's `deps` option: the gateway's own Kysely, counted. */
  readonly countingDeps = <T extends { db: Kysely<Database> }>(deps: T): T => ({
    ...deps,
    db: deps.db.withPlugin(this.plugin),
  });
}
