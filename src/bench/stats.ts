// Small statistics helpers for benchmarks: medians of repeated timings.

export function median(xs: number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

/** Run `fn` until `budgetMs` has passed (at least `minReps` times, after one warm-up); returns each run's ms. */
export function timeRepeated(fn: () => void, budgetMs: number, minReps = 3, maxReps = 1000): number[] {
  fn();
  const times: number[] = [];
  const start = performance.now();
  while (times.length < minReps || (performance.now() - start < budgetMs && times.length < maxReps)) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  return times;
}

export function peakRssBytes(): number { return process.resourceUsage().maxRSS * 1024; }
