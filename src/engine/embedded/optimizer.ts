// AdamW over the LoRA parameters (PyTorch's semantics: decoupled weight decay, bias-corrected
// moments), with global-norm gradient clipping.
import type { LoraAdapter } from './lora.ts';
import { ADAM_DEFAULTS, type AdamParams } from '../types.ts';

export class AdamW {
  step = 0;
  readonly m: Float32Array[];
  readonly v: Float32Array[];

  constructor(params: LoraAdapter) {
    this.m = [...params.tensors()].map((t) => new Float32Array(t.data.length));
    this.v = [...params.tensors()].map((t) => new Float32Array(t.data.length));
  }

  /** p ← p − lr·(m̂/(√v̂ + eps) + wd·p) with gradients already scaled (mean over tokens, clipped). */
  apply(params: LoraAdapter, grads: LoraAdapter, p: AdamParams): void {
    const { beta1, beta2, eps, weightDecay } = { ...ADAM_DEFAULTS, ...p };
    this.step++;
    const bc1 = 1 - beta1 ** this.step, bc2 = 1 - beta2 ** this.step;
    const ps = [...params.tensors()], gs = [...grads.tensors()];
    for (let t = 0; t < ps.length; t++) {
      const w = ps[t].data, g = gs[t].data, m = this.m[t], v = this.v[t];
      for (let i = 0; i < w.length; i++) {
        m[i] = beta1 * m[i] + (1 - beta1) * g[i];
        v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
        w[i] -= p.learningRate * ((m[i] / bc1) / (Math.sqrt(v[i] / bc2) + eps) + weightDecay * w[i]);
      }
    }
  }
}

/** √(Σ g²) over every gradient tensor, times `scale`. */
export function gradNorm(grads: LoraAdapter, scale = 1): number {
  let ss = 0;
  for (const t of grads.tensors()) for (let i = 0; i < t.data.length; i++) ss += t.data[i] * t.data[i];
  return Math.sqrt(ss) * Math.abs(scale);
}
