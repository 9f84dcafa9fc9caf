// The backward pass of one layer for full-parameter training: the input gradient exactly as the
// LoRA backward (backward.ts) computes it, plus the gradient of every weight of the layer — RMSNorm
// weights (incl. Qwen3's per-head q/k norms), the q/k/v biases (Qwen2), and the four fused
// projections, each dW += dYᵀ·X over the rows (row-major [out × in], the layout Hugging Face stores).
// The layer is differentiated from a tape of its internals (recorded in the forward pass, or
// recomputed here from its checkpointed input).
import type { Transformer, BatchContext, LayerTape } from './model.ts';
import { rmsnormBackward, rmsnormWeightGrad } from './ops/rmsnorm.ts';
import { arenaKv } from './kv-cache.ts';

/** Gradients of one layer's weights (row-major; null where the architecture has no such weight). */
export interface LayerGrads {
  inputNorm: Float32Array;
  postNorm: Float32Array;
  wqkv: Float32Array;
  bqkv: Float32Array | null;
  qNorm: Float32Array | null;
  kNorm: Float32Array | null;
  wo: Float32Array;
  wgu: Float32Array;
  wdown: Float32Array;
}

export class FullBackprop {
  private readonly m: Transformer;
  private rows = 0;
  private tape!: LayerTape;
  private buf!: { dqkv: Float32Array; datt: Float32Array; dgu: Float32Array; dact: Float32Array; dh: Float32Array };

  constructor(model: Transformer) { this.m = model; }

  private ensure(rows: number): void {
    if (rows <= this.rows) return;
    this.release();
    const { arena, cfg, qDim, ldqkv } = this.m;
    const H = cfg.hiddenSize, I = cfg.intermediateSize;
    this.tape = this.m.allocTape(rows, 0, []);
    this.buf = { dqkv: arena.alloc(rows * ldqkv), datt: arena.alloc(rows * qDim), dgu: arena.alloc(rows * 2 * I), dact: arena.alloc(rows * I), dh: arena.alloc(rows * H) };
    this.rows = rows;
  }

  release(): void {
    if (this.rows === 0) return;
    this.m.freeTape(this.tape);
    for (const v of Object.values(this.buf)) this.m.arena.free(v);
    this.rows = 0;
  }

  /**
   * dx holds ∂L/∂(layer l's output) for every row; on return ∂L/∂(its input). The layer's weight
   * gradients are added into `g`. Weights are those of the pass (`ctx.weights`).
   */
  layer(l: number, input: Float32Array, ctx: BatchContext, dx: Float32Array, dK: Float32Array[], dV: Float32Array[], recorded: LayerTape | null, g: LayerGrads): void {
    const { m } = this;
    const { cfg, kernel, qDim, kvDim, ldqkv } = m;
    const R = ctx.rows, H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim, eps = cfg.rmsNormEps;
    const L = ctx.weights.layers[l];
    this.ensure(R);
    const { buf } = this;
    let tape = recorded;
    if (!tape) {
      tape = this.tape;
      const ws = m.workspace(R);
      ws.x.set(input.subarray(0, R * H));
      m.runLayer(l, ws, { ...ctx, segments: [{ row0: 0, rows: R, adapter: null }] }, tape);
    }
    const acc = { accumulate: true };

    // MLP: x3 = x2 + down(swiglu(gate_up(norm(x2))))
    kernel.matmulTN(g.wdown, dx, tape.act, H, I, R, acc);
    kernel.matmulPackedT(buf.dact, dx, L.wdown, R);
    kernel.swigluBackward(buf.dgu, buf.dact, tape.gu, R, I);
    kernel.matmulTN(g.wgu, buf.dgu, tape.xn2, 2 * I, H, R, acc);
    kernel.matmulPackedT(buf.dh, buf.dgu, L.wgu, R);
    rmsnormWeightGrad(g.postNorm, buf.dh, tape.x2, R, H, eps);
    rmsnormBackward(dx, buf.dh, tape.x2, L.postNorm, R, H, eps, true);

    // attention: x2 = x + o(attention(rope(norm_qk(qkv(norm(x)) + b))))
    kernel.matmulTN(g.wo, dx, tape.att, H, qDim, R, acc);
    kernel.matmulPackedT(buf.datt, dx, L.wo, R);
    const rowK = ctx.rowCache.map((c) => arenaKv(c).k[l]), rowV = ctx.rowCache.map((c) => arenaKv(c).v[l]);
    for (const b of new Set([...dK, ...dV])) b.fill(0);
    kernel.attentionBackward({ q: tape.qkv, ldq: ldqkv, out: tape.att, rows: R, rowK, rowV, rowPos: ctx.rowPos, dOut: buf.datt, dq: buf.dqkv, lddq: ldqkv, rowDK: dK, rowDV: dV }, cfg);
    for (let i = 0; i < R; i++) {
      const o = i * ldqkv, p = ctx.rowPos[i] * kvDim;
      buf.dqkv.set(dK[i].subarray(p, p + kvDim), o + qDim);
      buf.dqkv.set(dV[i].subarray(p, p + kvDim), o + qDim + kvDim);
      for (let h = 0; h < cfg.numHeads; h++) m.rope.applyTransposed(buf.dqkv, o + h * hd, ctx.rowPos[i]);
      for (let h = 0; h < cfg.numKvHeads; h++) m.rope.applyTransposed(buf.dqkv, o + qDim + h * hd, ctx.rowPos[i]);
      if (L.qNorm && L.kNorm && g.qNorm && g.kNorm) {
        // each head's hd values are one norm row (the weights are shared by the heads)
        rmsnormWeightGrad(g.qNorm, buf.dqkv, tape.qkvRaw, cfg.numHeads, hd, eps, hd, hd, o, o);
        rmsnormWeightGrad(g.kNorm, buf.dqkv, tape.qkvRaw, cfg.numKvHeads, hd, eps, hd, hd, o + qDim, o + qDim);
        rmsnormBackward(buf.dqkv, buf.dqkv, tape.qkvRaw, L.qNorm, cfg.numHeads, hd, eps, false, hd, hd, hd, o, o, o);
        rmsnormBackward(buf.dqkv, buf.dqkv, tape.qkvRaw, L.kNorm, cfg.numKvHeads, hd, eps, false, hd, hd, hd, o + qDim, o + qDim, o + qDim);
      }
    }
    // buf.dqkv is now ∂L/∂(qkv + b): the bias gradient is its column sum
    if (g.bqkv) for (let i = 0; i < R; i++) for (let j = 0; j < ldqkv; j++) g.bqkv[j] += buf.dqkv[i * ldqkv + j];
    kernel.matmulTN(g.wqkv, buf.dqkv, tape.xn1, ldqkv, H, R, acc);
    kernel.matmulPackedT(buf.dh, buf.dqkv, L.wqkv, R);
    rmsnormWeightGrad(g.inputNorm, buf.dh, input, R, H, eps);
    rmsnormBackward(dx, buf.dh, input, L.inputNorm, R, H, eps, true);
  }
}
