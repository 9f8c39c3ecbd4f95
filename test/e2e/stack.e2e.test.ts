import { createStackApp } from '../support/app-journey';
import type { StackApp } from '../support/app-journey';
import { linkLifecycleJourney } from '../support/link-journey';
import type { Stack } from '../support/stack';
import { startRunStack } from '../support/stack';

/**
 * A customer's whole journey against the spawned, compiled stack, touching it only as customers
 * and operators do: the operator CLI creates the app and key, the HTTP API manages the link, and
 * the link host is followed like a phone would. No database access, no in-process services.
 * The journey itself (test/support/link-journey.ts) runs on Redis Cluster too (test/cluster).
 */

jest.setTimeout(60_000);

let stack: Stack;
let app: StackApp;

beforeAll(async () => {
  stack = await startRunStack();
  app = await createStackApp(stack, 'Journey Inc');
  expect(app.linkHost).toBe(`${app.subdomainKey}.${stack.linkDomain}`);
});

afterAll(async () => {
  await stack.stop();
});

it('creates, reads, lists, follows, counts, changes and archives a link', async () => {
  await linkLifecycleJourney(stack, app);
});
