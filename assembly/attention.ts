// Causal grouped-query attention over KV caches, forward and backward.
import { fma, dot4, axpy, exp4, hsum } from './common';

/**
 * The unnormalised attention weights of one query head: scratch[j - start] = e^(q·k_j·scale − max)
 * for j in [start, pos]; returns 1 / their sum. Shared by the forward and backward passes, so both
 * see the same probabilities.
 */
@inline function softmax_scores(q: usize, K: usize, kvDim: i32, kvo: i32, start: i32, pos: i32, hd: i32, scale: f32, scratch: usize): f32 {
  let mx: f32 = -Infinity;
  for (let j = start; j <= pos; j++) {
    const s = dot4(q, K + (<usize>(j * kvDim + kvo) << 2), hd) * scale;
    store<f32>(scratch + (<usize>(j - start) << 2), s);
    if (s > mx) mx = s;
  }
  // e^(s − max), four scores at a time (exp4: relative error < 2e-7). The last group is padded
  // with −∞ (e^−∞ = 0; the thread's scratch is a multiple of 16 floats long), so every score goes
  // through the same arithmetic.
  const n = pos - start + 1, vmx = f32x4.splat(mx);
  for (let i = n; i & 3; i++) store<f32>(scratch + (<usize>i << 2), -Infinity);
  let acc = f32x4.splat(0);
  for (let i = 0; i < n; i += 4) {
    const a = scratch + (<usize>i << 2);
    const e = exp4(f32x4.sub(v128.load(a), vmx));
    v128.store(a, e);
    acc = f32x4.add(acc, e);
  }
  return 1 / hsum(acc);
}

// Causal grouped-query attention for query heads [p0, p1) of a batch, where pair p is
// (row p / nHeads, head p % nHeads). `table` holds, per row, the byte offsets of that row's key
// and value cache blocks and its position. Scores go to this thread's `scratch`.
// out[r, h·hd + d] = Σ_j softmax_j(q·k_j · scale) v_j[d], j over [pos - window + 1, pos].
export function attention(qkv: usize, ldq: i32, out: usize, table: usize, p0: i32, p1: i32, nHeads: i32, nKv: i32, hd: i32, window: i32, scale: f32, scratch: usize): void {
  const group = nHeads / nKv;
  const kvDim = nKv * hd;
  const hd4 = hd & ~3;
  for (let p = p0; p < p1; p++) {
    const r = p / nHeads, h = p % nHeads;
    const t = table + (<usize>(r * 3) << 2);
    const K = <usize>load<u32>(t), V = <usize>load<u32>(t, 4), pos = load<i32>(t, 8);
    const start = window > 0 ? max(0, pos - window + 1) : 0;
    const q = qkv + (<usize>(r * ldq + h * hd) << 2);
    const kvo = (h / group) * hd;
    const inv = softmax_scores(q, K, kvDim, kvo, start, pos, hd, scale, scratch);
    const o = out + (<usize>(r * nHeads * hd + h * hd) << 2);
    // o[d] = Σ_j P_j·v_j[d], j in increasing order for every d; 16 columns at a time stay in
    // registers across the keys (four independent chains) instead of a load and store per key
    const hd16 = hd & ~15;
    for (let d = 0; d < hd16; d += 16) {
      let o0 = f32x4.splat(0), o1 = f32x4.splat(0), o2 = f32x4.splat(0), o3 = f32x4.splat(0);
      for (let j = start; j <= pos; j++) {
        const vw = f32x4.splat(load<f32>(scratch + (<usize>(j - start) << 2)) * inv);
        const vj = V + (<usize>(j * kvDim + kvo + d) << 2);
        o0 = fma(vw, v128.load(vj), o0); o1 = fma(vw, v128.load(vj, 16), o1);
        o2 = fma(vw, v128.load(vj, 32), o2); o3 = fma(vw, v128.load(vj, 48), o3);
      }
      const od = o + (<usize>d << 2);
      v128.store(od, o0); v128.store(od, o1, 16); v128.store(od, o2, 32); v128.store(od, o3, 48);
    }
    for (let d = hd16; d < hd4; d += 4) {
      let o0 = f32x4.splat(0);
      for (let j = start; j <= pos; j++) {
        const vw = f32x4.splat(load<f32>(scratch + (<usize>(j - start) << 2)) * inv);
        o0 = fma(vw, v128.load(V + (<usize>(j * kvDim + kvo + d) << 2)), o0);
      }
      v128.store(o + (<usize>d << 2), o0);
    }
    for (let d = hd4; d < hd; d++) {
      let x: f32 = 0;
      for (let j = start; j <= pos; j++) x += load<f32>(scratch + (<usize>(j - start) << 2)) * inv * load<f32>(V + (<usize>(j * kvDim + kvo + d) << 2));
      store<f32>(o + (<usize>d << 2), x);
    }
  }
}

// Backward of `attention` for training rows (every position of each sequence is a row).
// Work unit p = (sequence p / nKv, key/value head p % nKv): it owns that head's columns of the
// sequence's dK/dV blocks and the dq columns of the query heads that read it, so threads never
// write the same memory. `table` per row: K, V, dK, dV byte offsets and position; `segs` per
// sequence: first row and row count. With P = softmax(S), o = Σ P_j v_j and incoming dO:
//   dP_j = dO·v_j,  dS_j = P_j (dP_j − dO·o),  dq = Σ dS_j k_j·scale,  dk_j += dS_j q·scale,  dv_j += P_j dO.
export function attention_backward(dq: usize, lddq: i32, dout: usize, out: usize, q: usize, ldq: i32, table: usize, segs: usize, p0: i32, p1: i32, nHeads: i32, nKv: i32, hd: i32, window: i32, scale: f32, scratch: usize): void {
  const group = nHeads / nKv;
  const kvDim = nKv * hd;
  const qDim = nHeads * hd;
  for (let p = p0; p < p1; p++) {
    const seq = p / nKv, kvh = p % nKv;
    const row0 = load<i32>(segs + (<usize>(seq * 2) << 2)), rows = load<i32>(segs + (<usize>(seq * 2 + 1) << 2));
    const kvo = kvh * hd;
    for (let r = row0; r < row0 + rows; r++) {
      const t = table + (<usize>(r * 5) << 2);
      const K = <usize>load<u32>(t), V = <usize>load<u32>(t, 4), dK = <usize>load<u32>(t, 8), dV = <usize>load<u32>(t, 12), pos = load<i32>(t, 16);
      const start = window > 0 ? max(0, pos - window + 1) : 0;
      for (let h = kvh * group; h < (kvh + 1) * group; h++) {
        const qh = q + (<usize>(r * ldq + h * hd) << 2);
        const oh = out + (<usize>(r * qDim + h * hd) << 2);
        const doh = dout + (<usize>(r * qDim + h * hd) << 2);
        const dqh = dq + (<usize>(r * lddq + h * hd) << 2);
        const inv = softmax_scores(qh, K, kvDim, kvo, start, pos, hd, scale, scratch);
        const D = dot4(doh, oh, hd);
        for (let d = 0; d < hd; d++) store<f32>(dqh + (<usize>d << 2), 0);
        for (let j = start; j <= pos; j++) {
          const P = load<f32>(scratch + (<usize>(j - start) << 2)) * inv;
          const ko = <usize>(j * kvDim + kvo) << 2;
          const dP = dot4(doh, V + ko, hd);
          const dS = P * (dP - D) * scale;
          axpy(dV + ko, doh, P, hd);
          axpy(dqh, K + ko, dS, hd);
          axpy(dK + ko, qh, dS, hd);
        }
      }
    }
  }
}

