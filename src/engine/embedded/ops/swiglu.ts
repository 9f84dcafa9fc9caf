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

/** dgu = [dgate | dup] from dout: dgate = dout·up·silu'(g), dup = dout·silu(g), silu'(g) = σ(g)(1 + g(1 − σ(g))). */
export function swigluBackward(dgu: Float32Array, dout: Float32Array, gu: Float32Array, rows: number, inter: number): void {
  for (let r = 0; r < rows; r++) {
    const g0 = r * 2 * inter, o0 = r * inter;
    for (let i = 0; i < inter; i++) {
      const g = gu[g0 + i], up = gu[g0 + inter + i], d = dout[o0 + i];
      const sig = 1 / (1 + Math.exp(-g));
      dgu[g0 + i] = d * up * sig * (1 + g * (1 - sig));
      dgu[g0 + inter + i] = d * g * sig;
    }
  }
}
