/** Averages of every `window` consecutive numbers. */
export function movingAverage(xs: number[], window: number): number[] {
  const out: number[] = [];
  for (let i = window - 1; i < xs.length; i++) { // @mutate
    let total = 0;
    for (let j = i - window + 1; j <= i; j++) total += xs[j]; // @mutate
    out.push(total / window);
  }
  return out;
}
