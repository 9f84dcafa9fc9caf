/** The index of `target` in the sorted list `xs`, or -1. */
export function binarySearch(xs: number[], target: number): number {
  let lo = 0;
  let hi = xs.length - 1;
  while (lo <= hi) { // @mutate
    const mid = Math.floor((lo + hi) / 2);
    if (xs[mid] === target) return mid; // @mutate
    if (xs[mid] < target) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}
