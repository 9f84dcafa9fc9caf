// The last N values of a measurement (judge lag, staleness, …) for live quantiles, plus running
// totals since the start for Prometheus summaries (whose _sum and _count must only go up).

export interface RecentSummary { p50: number; p99: number; max: number; mean: number; count: number; sum: number; window: number }

/** The nearest-rank p-th percentile (0–100) of unsorted values; NaN when there are none. */
export function nearestRank(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
}

export class RecentValues {
  private readonly ring: number[] = [];
  private next = 0;
  /** since the start */
  count = 0;
  sum = 0;
  readonly size: number;

  constructor(size = 2048) { this.size = size; }

  add(value: number): void {
    if (this.ring.length < this.size) this.ring.push(value); else this.ring[this.next] = value;
    this.next = (this.next + 1) % this.size;
    this.count++;
    this.sum += value;
  }

  /** The kept values, oldest first. */
  values(): number[] {
    return this.ring.length < this.size ? [...this.ring] : [...this.ring.slice(this.next), ...this.ring.slice(0, this.next)];
  }

  /** Quantiles, max and mean over the kept values; totals since the start. null before the first value. */
  summary(): RecentSummary | null {
    if (this.ring.length === 0) return null;
    return {
      p50: nearestRank(this.ring, 50), p99: nearestRank(this.ring, 99), max: Math.max(...this.ring),
      mean: this.ring.reduce((a, b) => a + b, 0) / this.ring.length, count: this.count, sum: this.sum, window: this.ring.length,
    };
  }
}
