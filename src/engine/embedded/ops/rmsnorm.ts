// RMSNorm: y = x / sqrt(mean(x²) + eps) · w, row by row (Llama/Qwen: no bias, no mean subtraction).
// The backward passes (input and weight gradients) sit beside it.

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

/**
 * dx (+)= ∂/∂x of RMSNorm for frozen weights: with n = dim, inv = 1/√(mean(x²)+eps), g = w ⊙ dy,
 * dx = inv·g − inv³·x·(g·x)/n.
 */
export function rmsnormBackward(dx: Float32Array, dy: Float32Array, x: Float32Array, w: Float32Array, rows: number, dim: number, eps: number, accumulate: boolean, strideX = dim, strideDy = dim, strideDx = dim, offX = 0, offDy = 0, offDx = 0): void {
  for (let r = 0; r < rows; r++) {
    const xo = offX + r * strideX, go = offDy + r * strideDy, dxo = offDx + r * strideDx;
    let ss = 0, gx = 0;
    for (let i = 0; i < dim; i++) { const xi = x[xo + i]; ss += xi * xi; gx += w[i] * dy[go + i] * xi; }
    const inv = 1 / Math.sqrt(ss / dim + eps);
    const k = (inv * inv * inv * gx) / dim;
    for (let i = 0; i < dim; i++) {
      const v = inv * w[i] * dy[go + i] - k * x[xo + i];
      if (accumulate) dx[dxo + i] += v; else dx[dxo + i] = v;
    }
  }
}

/**
 * dw (+)= ∂/∂w of RMSNorm (full-parameter training): dw[i] += Σ_rows dy[i]·x[i]·inv, with the same
 * row layout arguments as rmsnormBackward.
 */
export function rmsnormWeightGrad(dw: Float32Array, dy: Float32Array, x: Float32Array, rows: number, dim: number, eps: number, strideX = dim, strideDy = dim, offX = 0, offDy = 0): void {
  for (let r = 0; r < rows; r++) {
    const xo = offX + r * strideX, go = offDy + r * strideDy;
    let ss = 0;
    for (let i = 0; i < dim; i++) ss += x[xo + i] * x[xo + i];
    const inv = 1 / Math.sqrt(ss / dim + eps);
    for (let i = 0; i < dim; i++) dw[i] += dy[go + i] * x[xo + i] * inv;
  }
}
