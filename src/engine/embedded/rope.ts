// Rotary position embeddings in Hugging Face's "rotate_half" convention: dimension i of a head
// pairs with i + headDim/2. Frequencies follow transformers' rope initialisers for the supported
// scaling types; values are rounded to float32 at the same steps as the reference implementation.
import type { ModelConfig } from './config.ts';

const f = Math.fround;

export interface RopeFrequencies { invFreq: Float32Array; attentionScaling: number }

export function ropeFrequencies(cfg: ModelConfig): RopeFrequencies {
  const dim = cfg.headDim, half = dim / 2, base = cfg.ropeTheta;
  const invFreq = new Float32Array(half);
  for (let i = 0; i < half; i++) invFreq[i] = f(1 / f(base ** f((2 * i) / dim)));
  const rs = cfg.ropeScaling;
  if (!rs) return { invFreq, attentionScaling: 1 };
  if (rs.type === 'linear') {
    for (let i = 0; i < half; i++) invFreq[i] = f(invFreq[i] / rs.factor);
    return { invFreq, attentionScaling: 1 };
  }
  if (rs.type === 'llama3') {
    const oldCtx = rs.originalMaxPositionEmbeddings ?? 8192;
    const low = rs.lowFreqFactor ?? 1, high = rs.highFreqFactor ?? 4;
    const lowWavelen = oldCtx / low, highWavelen = oldCtx / high;
    for (let i = 0; i < half; i++) {
      const wavelen = (2 * Math.PI) / invFreq[i];
      if (wavelen < highWavelen) continue;
      if (wavelen > lowWavelen) { invFreq[i] = f(invFreq[i] / rs.factor); continue; }
      const smooth = (oldCtx / wavelen - low) / (high - low);
      invFreq[i] = f((1 - smooth) * (invFreq[i] / rs.factor) + smooth * invFreq[i]);
    }
    return { invFreq, attentionScaling: 1 };
  }
  // yarn: blend interpolated and extrapolated frequencies over a ramp of dimensions
  const oldCtx = rs.originalMaxPositionEmbeddings ?? cfg.maxPositionEmbeddings;
  const betaFast = rs.betaFast ?? 32, betaSlow = rs.betaSlow ?? 1;
  const corr = (rot: number) => (dim * Math.log(oldCtx / (rot * 2 * Math.PI))) / (2 * Math.log(base));
  const lo = Math.max(Math.floor(corr(betaFast)), 0);
  let hi = Math.min(Math.ceil(corr(betaSlow)), dim - 1);
  if (lo === hi) hi += 0.001;
  for (let i = 0; i < half; i++) {
    const ramp = Math.min(1, Math.max(0, (i - lo) / (hi - lo)));
    const extrap = 1 - ramp;
    const posFreq = base ** ((2 * i) / dim);
    invFreq[i] = f((1 / (rs.factor * posFreq)) * (1 - extrap) + (1 / posFreq) * extrap);
  }
  const attentionScaling = rs.attentionFactor ?? (rs.factor <= 1 ? 1 : 0.1 * Math.log(rs.factor) + 1);
  return { invFreq, attentionScaling };
}

/** cos/sin tables [position, headDim/2], extended on demand. */
export class RopeTable {
  private cos = new Float32Array(0);
  private sin = new Float32Array(0);
  private positions = 0;
  private readonly freqs: RopeFrequencies;
  constructor(freqs: RopeFrequencies) { this.freqs = freqs; }

  private ensure(n: number): void {
    if (n <= this.positions) return;
    const half = this.freqs.invFreq.length;
    const cap = Math.max(n, this.positions * 2, 64);
    const cos = new Float32Array(cap * half), sin = new Float32Array(cap * half);
    cos.set(this.cos); sin.set(this.sin);
    const s = this.freqs.attentionScaling;
    for (let p = this.positions; p < cap; p++) {
      for (let i = 0; i < half; i++) {
        const angle = f(p * this.freqs.invFreq[i]);
        cos[p * half + i] = f(Math.cos(angle) * s);
        sin[p * half + i] = f(Math.sin(angle) * s);
      }
    }
    this.cos = cos; this.sin = sin; this.positions = cap;
  }

  /** The backward of `apply`: rotate a gradient by the transposed rotation (−angle), in place. */
  applyTransposed(x: Float32Array, off: number, p: number): void {
    this.ensure(p + 1);
    const half = this.freqs.invFreq.length, t = p * half;
    for (let i = 0; i < half; i++) {
      const a = x[off + i], b = x[off + i + half], c = this.cos[t + i], s = this.sin[t + i];
      x[off + i] = a * c + b * s;
      x[off + i + half] = b * c - a * s;
    }
  }

  /** Rotate one head vector x[off .. off+headDim) in place for position p. */
  apply(x: Float32Array, off: number, p: number): void {
    this.ensure(p + 1);
    const half = this.freqs.invFreq.length, t = p * half;
    for (let i = 0; i < half; i++) {
      const a = x[off + i], b = x[off + i + half], c = this.cos[t + i], s = this.sin[t + i];
      x[off + i] = a * c - b * s;
      x[off + i + half] = b * c + a * s;
    }
  }
}
