/**
 * `work`, or `fallback` once `ms` have passed: for a collect callback that reads a dependency at
 * scrape time (a frozen Redis must not hang the scrape, and with it every other metric).
 */
export async function withinOr<T>(work: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeUp = new Promise<T>((resolve) => {
    timer = setTimeout(() => {
      resolve(fallback);
    }, ms);
  });
  try {
    return await Promise.race([work.catch(() => fallback), timeUp]);
  } finally {
    clearTimeout(timer);
  }
}
