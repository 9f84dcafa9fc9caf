// SwiGLU: out = silu(gate) · up, where the fused GEMM output holds [gate | up] per row.

export function swigluForward(out: Float32Array, gu: Float32Array, rows: number, inter: number): void {
  for (let r = 0; r < rows; r++) {
    const g0 = r * 2 * inter, o0 = r * inter;
    for (let i = 0; i < inter; i++) {
      const g = gu[g0 + i];
      out[o0 + i] = (g / (1 + Math.exp(-g))) * gu[g0 + inter + i];
    }
  }
}
