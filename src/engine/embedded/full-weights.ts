// Full sets of model weights as trainable parameters: copies for versions (a snapshot per saved
// version, the tie between embeddings and LM head kept), the list of parameter tensors with their
// Hugging Face names, gradient buffers, and AdamW applied straight to the packed weights the
// forward kernels read (so nothing needs repacking after an update).
//
// Gradients and Adam moments are row-major [rows × cols] (the layout the gradient GEMMs produce
// and Hugging Face stores); a packed matrix's weight (r, k) lives at its panel position (packed.ts).
import type { ModelConfig } from './config.ts';
import type { Arena } from './arena.ts';
import type { ModelWeights, LayerWeights } from './weights.ts';
import type { PackedMatrix } from './kernels/packed.ts';
import { ADAM_DEFAULTS, type AdamParams } from '../types.ts';
import type { UpdateStats } from '../../learn/weights-guard.ts';

/** One trainable tensor. `parts` name its Hugging Face tensors, stacked by rows (q/k/v and gate/up are fused). */
export interface FullParam {
  parts: [name: string, rows: number][];
  rows: number;
  cols: number;
  /** the weights themselves (packed panels for matrices) */
  data: Float32Array;
  packed: boolean;
}

function clonePacked(m: PackedMatrix, arena: Arena): PackedMatrix {
  const data = arena.alloc(m.data.length, false);
  data.set(m.data);
  return { data, rows: m.rows, cols: m.cols };
}

function cloneArray(a: Float32Array | null, arena: Arena): Float32Array | null {
  if (!a) return null;
  const out = arena.alloc(a.length, false);
  out.set(a);
  return out;
}

/** A deep copy in the arena; tied embeddings stay one tensor. */
export function cloneWeights(w: ModelWeights, arena: Arena): ModelWeights {
  const embed = clonePacked(w.embed, arena);
  const layers: LayerWeights[] = w.layers.map((L) => ({
    inputNorm: cloneArray(L.inputNorm, arena)!, postNorm: cloneArray(L.postNorm, arena)!,
    wqkv: clonePacked(L.wqkv, arena), bqkv: cloneArray(L.bqkv, arena), qNorm: cloneArray(L.qNorm, arena), kNorm: cloneArray(L.kNorm, arena),
    wo: clonePacked(L.wo, arena), wgu: clonePacked(L.wgu, arena), wdown: clonePacked(L.wdown, arena),
  }));
  const lmHead = w.lmHead === w.embed ? embed : clonePacked(w.lmHead, arena);
  return { embed, layers, finalNorm: cloneArray(w.finalNorm, arena)!, lmHead, sourceDtypes: w.sourceDtypes, bytes: w.bytes };
}

/** Every tensor of `w`, each once (a tied LM head is the embedding). */
export function fullParams(cfg: ModelConfig, w: ModelWeights): FullParam[] {
  const H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim, q = cfg.numHeads * hd, kv = cfg.numKvHeads * hd;
  const out: FullParam[] = [];
  const packed = (m: PackedMatrix, parts: [string, number][]) => out.push({ parts, rows: m.rows, cols: m.cols, data: m.data, packed: true });
  const vector = (a: Float32Array, parts: [string, number][]) => out.push({ parts, rows: a.length, cols: 1, data: a, packed: false });
  packed(w.embed, [['model.embed_tokens.weight', cfg.vocabSize]]);
  w.layers.forEach((L, l) => {
    const p = `model.layers.${l}.`, a = `${p}self_attn.`;
    vector(L.inputNorm, [[`${p}input_layernorm.weight`, H]]);
    vector(L.postNorm, [[`${p}post_attention_layernorm.weight`, H]]);
    packed(L.wqkv, [[`${a}q_proj.weight`, q], [`${a}k_proj.weight`, kv], [`${a}v_proj.weight`, kv]]);
    if (L.bqkv) vector(L.bqkv, [[`${a}q_proj.bias`, q], [`${a}k_proj.bias`, kv], [`${a}v_proj.bias`, kv]]);
    if (L.qNorm) vector(L.qNorm, [[`${a}q_norm.weight`, hd]]);
    if (L.kNorm) vector(L.kNorm, [[`${a}k_norm.weight`, hd]]);
    packed(L.wo, [[`${a}o_proj.weight`, H]]);
    packed(L.wgu, [[`${p}mlp.gate_proj.weight`, I], [`${p}mlp.up_proj.weight`, I]]);
    packed(L.wdown, [[`${p}mlp.down_proj.weight`, H]]);
  });
  vector(w.finalNorm, [['model.norm.weight', H]]);
  if (w.lmHead !== w.embed) packed(w.lmHead, [['lm_head.weight', cfg.vocabSize]]);
  return out;
}

/** Free every tensor of a copy made by cloneWeights. */
export function freeWeights(w: ModelWeights, arena: Arena): void {
  for (const L of w.layers) {
    for (const a of [L.inputNorm, L.postNorm, L.bqkv, L.qNorm, L.kNorm]) if (a) arena.free(a);
    for (const m of [L.wqkv, L.wo, L.wgu, L.wdown]) arena.free(m.data);
  }
  arena.free(w.finalNorm);
  arena.free(w.embed.data);
  if (w.lmHead !== w.embed) arena.free(w.lmHead.data);
}

/** Σ g² over every gradient tensor. */
export function sumSquares(grads: Float32Array[]): number {
  let ss = 0;
  for (const g of grads) for (let i = 0; i < g.length; i++) ss += g[i] * g[i];
  return ss;
}

/**
 * AdamW (PyTorch semantics, bias-corrected, decoupled decay) on one parameter: row-major `g` (used
 * times `gradScale`: the token mean and the clipping, folded in to save a pass), `m`, `v`, and the
 * weights `p.data` in their own layout. `step` is the step number after increment.
 * With `dryRun` nothing is written: the update's statistics are only added into `stats` (the
 * weights guard decides on them before anything changes).
 */
export function adamwFull(p: FullParam, g: Float32Array, m: Float32Array, v: Float32Array, step: number, adam: AdamParams, gradScale = 1, stats: UpdateStats | null = null, dryRun = false): void {
  const { beta1, beta2, eps, weightDecay } = { ...ADAM_DEFAULTS, ...adam };
  const lr = adam.learningRate, bc1 = 1 - beta1 ** step, bc2 = 1 - beta2 ** step;
  const w = p.data, cols = p.cols;
  let nb = 0, nd = 0, finite = true;
  for (let r = 0; r < p.rows; r++) {
    const base = p.packed ? (r >> 3) * cols * 8 + (r & 7) : r * cols;
    const stride = p.packed ? 8 : 1;
    for (let k = 0; k < cols; k++) {
      const gi = r * cols + k, wi = base + k * stride;
      const gs = Math.fround(g[gi] * gradScale);
      const mi = beta1 * m[gi] + (1 - beta1) * gs;
      const vi = beta2 * v[gi] + (1 - beta2) * gs * gs;
      const before = w[wi];
      // rounded as the stored float32 weight will be, so the statistics describe what would be served
      const after = Math.fround(before - lr * ((Math.fround(mi) / bc1) / (Math.sqrt(Math.fround(vi) / bc2) + eps) + weightDecay * before));
      if (stats) {
        if (!Number.isFinite(after)) finite = false;
        else { nb += before * before; nd += (after - before) * (after - before); }
      }
      if (!dryRun) { m[gi] = mi; v[gi] = vi; w[wi] = after; }
    }
  }
  if (stats) { stats.finite &&= finite; stats.normSqBefore += nb; stats.deltaNormSq += nd; }
}
