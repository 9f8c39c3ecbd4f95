import type { DbHandle } from '@linkservice/db';
import { testDatabase } from '@linkservice/testing';
import type { LinkctlRun } from './run-linkctl';
import { linkctlInProcess } from './run-linkctl';

/** The link domain every linkctl suite runs with. */
export const TEST_LINK_DOMAIN = 'links.example.test';

/**
 * The run's database (global-setup migrated it) for a suite's own checks, opened before its
 * tests and closed after them; call at the top of the file.
 */
export function useLinkctlDatabase(): () => DbHandle {
  let handle: DbHandle | undefined;
  beforeAll(() => {
    handle = testDatabase(2);
  });
  afterAll(async () => {
    await handle?.close();
  });
  return () => {
    if (!handle) throw new Error('the linkctl suite database is open only inside tests');
    return handle;
  };
}

/** linkctl with `args`, in this process, with the test environment and TEST_LINK_DOMAIN. */
export function linkctl(...args: string[]): Promise<LinkctlRun> {
  return linkctlInProcess(args, { LINK_DOMAIN: TEST_LINK_DOMAIN });
}

/** A refused command: non-zero exit, nothing on stdout, exactly one `linkctl: ` line on stderr. */
export function expectOneLineFailure(run: LinkctlRun, exitCode: number, reason: RegExp): void {
  expect({ code: run.code, stdout: run.stdout }).toEqual({ code: exitCode, stdout: '' });
  expect(run.stderr).toMatch(/^linkctl: [^\n]+\n$/);
  expect(run.stderr).toMatch(reason);
  expect(run.stderr).not.toMatch(/\bat .+:\d+:\d+/); // no stack frame
}
