export interface LatencySummary {
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

/** Nearest-rank percentiles at the resolution measured (autocannon's own are whole ms). */
export function summarizeLatencies(samplesMs: readonly number[]): LatencySummary {
  if (samplesMs.length === 0) return { p50Ms: Number.NaN, p99Ms: Number.NaN, meanMs: Number.NaN };
  const sorted = Float64Array.from(samplesMs).sort();
  const at = (p: number): number =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))];
  let sum = 0;
  for (const value of sorted) sum += value;
  return { p50Ms: at(0.5), p99Ms: at(0.99), meanMs: sum / sorted.length };
}
