import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '@linkservice/logger';
import type { ReadinessProbe } from './readiness';
import { checkReadiness, READINESS_TIMEOUT_MS } from './readiness';

/**
 * How long a service waits for its dependencies before it gives up and exits 1. Under the chart's
 * liveness budget (10 s delay + 6 failures 10 s apart), so a process that cannot start says why
 * in its own last line instead of being killed by a failed probe.
 */
export const STARTUP_TIMEOUT_MS = 30_000;

/** Between two rounds of the dependencies that did not answer yet. */
const RETRY_MS = 250;

/**
 * Resolves once every dependency has answered once (a Postgres `SELECT 1`, a Redis PING, BullMQ's
 * waitUntilReady), retrying the others until `timeoutMs`; then rejects naming the ones that never
 * did. Logs once when it has to wait, and again when they answered.
 */
export async function waitForDependencies(
  dependencies: Record<string, ReadinessProbe>,
  { timeoutMs = STARTUP_TIMEOUT_MS, logger }: { timeoutMs?: number; logger: Logger },
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let pending = dependencies;
  let waited = false;
  for (;;) {
    const attemptMs = Math.max(1, Math.min(READINESS_TIMEOUT_MS, deadline - Date.now()));
    const { ready, failures } = await checkReadiness(pending, attemptMs);
    if (ready) {
      if (waited) logger.info('dependencies ready');
      return;
    }
    const down = new Set<string>(failures.map((failure) => failure.dependency));
    pending = Object.fromEntries(Object.entries(pending).filter(([name]) => down.has(name)));
    if (Date.now() + RETRY_MS >= deadline) {
      const reasons = failures.map((failure) => `${failure.dependency}: ${failure.reason}`);
      throw new Error(`dependencies not ready within ${timeoutMs} ms (${reasons.join('; ')})`);
    }
    if (!waited) logger.warn({ failures }, 'waiting for dependencies before starting');
    waited = true;
    await sleep(RETRY_MS);
  }
}
