/**
 * Wraps `report` so it runs at most once per `intervalMs`: for warnings that a failing
 * dependency would otherwise repeat on every request.
 */
export function throttled<A extends unknown[]>(
  intervalMs: number,
  report: (...args: A) => void,
): (...args: A) => void {
  let last = -Infinity;
  return (...args: A) => {
    const now = Date.now();
    if (now - last < intervalMs) return;
    last = now;
    report(...args);
  };
}
