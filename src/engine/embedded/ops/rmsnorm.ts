// RMSNorm: y = x / sqrt(mean(x²) + eps) · w, row by row (Llama/Qwen: no bias, no mean subtraction).
// The backward pass (LoRA training) will sit beside it here.

/** rows × dim, rows at `stride` apart; y may alias x. */
export function rmsnormForward(y: Float32Array, x: Float32Array, w: Float32Array, rows: number, dim: number, eps: number, strideX = dim, strideY = dim, offX = 0, offY = 0): void {
  for (let r = 0; r < rows; r++) {
    const xo = offX + r * strideX, yo = offY + r * strideY;
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[xo + i] * x[xo + i];
    const inv = Math.fround(1 / Math.sqrt(Math.fround(ss / dim) + eps));
    for (let i = 0; i < dim; i++) y[yo + i] = w[i] * Math.fround(x[xo + i] * inv);
  }
}
