// The backward pass for LoRA training: gradients flow through the frozen model into the LoRA
// matrices. Each layer is differentiated from a tape of its internals: the one its forward pass
// recorded when the trainer could afford to keep every layer's tape, or else one recomputed here
// from the layer's checkpoint (its input rows) — then only one layer's tape exists at a time and
// activation memory is the checkpoints (one [rows × hidden] per layer) plus one layer's internals.
import type { Transformer, BatchContext, LayerTape } from './model.ts';
import type { LoraAdapter, LoraTarget } from './lora.ts';
import { rmsnormBackward } from './ops/rmsnorm.ts';
import { arenaKv } from './kv-cache.ts';

export class Backprop {
  private readonly m: Transformer;
  private readonly adapter: LoraAdapter;
  private readonly grads: LoraAdapter;
  private rows = 0;
  private tape!: LayerTape;
  private buf!: { dqkv: Float32Array; datt: Float32Array; dgu: Float32Array; dact: Float32Array; dh: Float32Array; du: Float32Array };

  constructor(model: Transformer, adapter: LoraAdapter, grads: LoraAdapter) {
    this.m = model; this.adapter = adapter; this.grads = grads;
  }

  /** Buffers for `rows` rows (kept across calls, grown when needed). */
  private ensure(rows: number): void {
    if (rows <= this.rows) return;
    this.release();
    const { arena, cfg, qDim, ldqkv } = this.m;
    const H = cfg.hiddenSize, I = cfg.intermediateSize, r = this.adapter.config.rank;
    this.tape = this.m.allocTape(rows, r, this.adapter.config.targets);
    this.buf = {
      dqkv: arena.alloc(rows * ldqkv), datt: arena.alloc(rows * qDim), dgu: arena.alloc(rows * 2 * I),
      dact: arena.alloc(rows * I), dh: arena.alloc(rows * H), du: arena.alloc(rows * r),
    };
    this.rows = rows;
  }

  release(): void {
    if (this.rows === 0) return;
    this.m.freeTape(this.tape);
    for (const v of Object.values(this.buf)) this.m.arena.free(v);
    this.rows = 0;
  }

  /**
   * LoRA backward of one module for rows sharing the trained adapter: with ũ = s·A·x on the tape,
   * y += B·ũ gives  dB += dyᵀ·ũ,  dũ = dy·B,  dA += s·dũᵀ·x,  dx += s·dũ·A.
   */
  private lora(tape: LayerTape, target: LoraTarget, l: number, x: Float32Array, ldx: number, dy: Float32Array, ldy: number, dx: Float32Array, ldDx: number, R: number): void {
    const m = this.adapter.layers[l][target], g = this.grads.layers[l][target];
    if (!m || !g) return;
    const k = this.m.kernel, r = this.adapter.config.rank, s = this.adapter.scale;
    const u = tape.u[target]!, du = this.buf.du;
    k.matmulTN(g.b, dy, u, m.out, r, R, { lda: ldy, ldb: r, ldc: r, accumulate: true });
    k.matmulNN(du, dy, m.b, R, r, m.out, { lda: ldy, ldb: r, ldc: r });
    for (let i = 0; i < R * r; i++) du[i] *= s;
    k.matmulTN(g.a, du, x, r, m.in, R, { lda: r, ldb: ldx, ldc: m.in, accumulate: true });
    k.matmulNN(dx, du, m.a, R, m.in, r, { lda: r, ldb: m.in, ldc: ldDx, accumulate: true });
  }

  /**
   * dx holds ∂L/∂(layer l's output) for every row; on return ∂L/∂(its input). LoRA gradients of the
   * layer are added to `grads`. `input` is the layer's checkpointed input; `dK`/`dV` are per-row
   * scratch blocks shaped like the rows' caches (zeroed here). `recorded` is the layer's tape from
   * the forward pass, if it was kept; otherwise the layer is recomputed first.
   */
  layer(l: number, input: Float32Array, ctx: BatchContext, dx: Float32Array, dK: Float32Array[], dV: Float32Array[], recorded: LayerTape | null): void {
    const { m } = this;
    const { cfg, kernel, qDim, kvDim, ldqkv } = m;
    const R = ctx.rows, H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim, eps = cfg.rmsNormEps;
    const L = m.weights.layers[l];
    this.ensure(R);
    const { buf } = this;
    let tape = recorded;
    if (!tape) {
      // recompute the layer with a tape (rewrites the same K/V into the caches)
      tape = this.tape;
      const ws = m.workspace(R, this.adapter.config.rank);
      ws.x.set(input.subarray(0, R * H));
      m.runLayer(l, ws, { ...ctx, segments: [{ row0: 0, rows: R, adapter: this.adapter }] }, tape);
    }

    // MLP: x3 = x2 + down(swiglu(gate_up(norm(x2))))
    kernel.matmulPackedT(buf.dact, dx, L.wdown, R);
    this.lora(tape, 'down_proj', l, tape.act, I, dx, H, buf.dact, I, R);
    kernel.swigluBackward(buf.dgu, buf.dact, tape.gu, R, I);
    kernel.matmulPackedT(buf.dh, buf.dgu, L.wgu, R);
    this.lora(tape, 'gate_proj', l, tape.xn2, H, buf.dgu, 2 * I, buf.dh, H, R);
    this.lora(tape, 'up_proj', l, tape.xn2, H, buf.dgu.subarray(I), 2 * I, buf.dh, H, R);
    rmsnormBackward(dx, buf.dh, tape.x2, L.postNorm, R, H, eps, true);

    // attention: x2 = x + o(attention(rope(norm_qk(qkv(norm(x))))))
    kernel.matmulPackedT(buf.datt, dx, L.wo, R);
    this.lora(tape, 'o_proj', l, tape.att, qDim, dx, H, buf.datt, qDim, R);
    const rowK = ctx.rowCache.map((c) => arenaKv(c).k[l]), rowV = ctx.rowCache.map((c) => arenaKv(c).v[l]);
    for (const b of new Set([...dK, ...dV])) b.fill(0);
    kernel.attentionBackward({ q: tape.qkv, ldq: ldqkv, out: tape.att, rows: R, rowK, rowV, rowPos: ctx.rowPos, dOut: buf.datt, dq: buf.dqkv, lddq: ldqkv, rowDK: dK, rowDV: dV }, cfg);
    for (let i = 0; i < R; i++) {
      const o = i * ldqkv, p = ctx.rowPos[i] * kvDim;
      buf.dqkv.set(dK[i].subarray(p, p + kvDim), o + qDim);
      buf.dqkv.set(dV[i].subarray(p, p + kvDim), o + qDim + kvDim);
      for (let h = 0; h < cfg.numHeads; h++) m.rope.applyTransposed(buf.dqkv, o + h * hd, ctx.rowPos[i]);
      for (let h = 0; h < cfg.numKvHeads; h++) m.rope.applyTransposed(buf.dqkv, o + qDim + h * hd, ctx.rowPos[i]);
      if (L.qNorm && L.kNorm) {
        rmsnormBackward(buf.dqkv, buf.dqkv, tape.qkvRaw, L.qNorm, cfg.numHeads, hd, eps, false, hd, hd, hd, o, o, o);
        rmsnormBackward(buf.dqkv, buf.dqkv, tape.qkvRaw, L.kNorm, cfg.numKvHeads, hd, eps, false, hd, hd, hd, o + qDim, o + qDim, o + qDim);
      }
    }
    kernel.matmulPackedT(buf.dh, buf.dqkv, L.wqkv, R);
    this.lora(tape, 'q_proj', l, tape.xn1, H, buf.dqkv, ldqkv, buf.dh, H, R);
    this.lora(tape, 'k_proj', l, tape.xn1, H, buf.dqkv.subarray(qDim), ldqkv, buf.dh, H, R);
    this.lora(tape, 'v_proj', l, tape.xn1, H, buf.dqkv.subarray(qDim + kvDim), ldqkv, buf.dh, H, R);
    rmsnormBackward(dx, buf.dh, input, L.inputNorm, R, H, eps, true);
  }
}
