/** Resolves when its dependency answers (a `SELECT 1`, a PING). */
export type ReadinessProbe = () => Promise<unknown>;

/** Bounded so a hung dependency fails /readyz instead of hanging it. */
export const READINESS_TIMEOUT_MS = 2_000;

export interface Readiness<D extends string = string> {
  ready: boolean;
  /** The dependencies that failed or did not answer in time, with why (for logs, not clients). */
  failures: { dependency: D; reason: string }[];
}

async function probeOne<D extends string>(
  dependency: D,
  probe: ReadinessProbe,
  timeoutMs: number,
): Promise<Readiness<D>['failures']> {
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    await Promise.race([probe(), timeUp]);
    return [];
  } catch (error) {
    return [{ dependency, reason: error instanceof Error ? error.message : String(error) }];
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every probe at once; what /readyz of every service answers from. */
export async function checkReadiness<D extends string>(
  probes: Record<D, ReadinessProbe>,
  timeoutMs = READINESS_TIMEOUT_MS,
): Promise<Readiness<D>> {
  const entries = Object.entries(probes) as [D, ReadinessProbe][];
  const failures = (
    await Promise.all(entries.map(([name, probe]) => probeOne(name, probe, timeoutMs)))
  ).flat();
  return { ready: failures.length === 0, failures };
}
