// Numerically stable log-softmax pieces over one row of logits.

export function logSumExp(x: Float32Array, off: number, n: number, invTemp = 1): number {
  let max = -Infinity;
  for (let i = 0; i < n; i++) { const v = x[off + i] * invTemp; if (v > max) max = v; }
  if (max === -Infinity) return max;
  let s = 0;
  for (let i = 0; i < n; i++) s += Math.exp(x[off + i] * invTemp - max);
  return max + Math.log(s);
}

export function argmax(x: Float32Array, off: number, n: number): number {
  let best = 0, bv = -Infinity;
  for (let i = 0; i < n; i++) if (x[off + i] > bv) { bv = x[off + i]; best = i; }
  return best;
}
