// Causal grouped-query attention over KV caches, forward and backward.
import { fma, dot4, axpy, exp4, hsum, EXP4_C } from './common';

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
  if (hd == 8) { attention8(qkv, ldq, out, table, p0, p1, nHeads, nKv, window, scale, scratch); return; }
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
  if (hd == 8) { attention_backward8(dq, lddq, dout, out, q, ldq, table, segs, p0, p1, nHeads, nKv, window, scale, scratch); return; }
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


// ---- heads of 8 (small models such as stories260K): a head is two vectors, and keys go four at a time ----
// The general loops above spend most of their time on one horizontal sum per key and on memory round trips
// of an 8-float accumulator. Here four keys' products are summed across lanes together (reduce4), the
// output and dq accumulators stay in registers, and the scale is folded into q once per head.

/** [Σ a, Σ b, Σ c, Σ d]: the lane sums of four vectors. */
@inline function reduce4(a: v128, b: v128, c: v128, d: v128): v128 {
  const ab = f32x4.add(f32x4.shuffle(a, b, 0, 4, 1, 5), f32x4.shuffle(a, b, 2, 6, 3, 7));
  const cd = f32x4.add(f32x4.shuffle(c, d, 0, 4, 1, 5), f32x4.shuffle(c, d, 2, 6, 3, 7));
  return f32x4.add(f32x4.shuffle(ab, cd, 0, 1, 4, 5), f32x4.shuffle(ab, cd, 2, 3, 6, 7));
}

/** x · (y0, y1) for the 8 floats at x, as a vector whose lanes sum to the dot product. */
@inline function part8(x: usize, y0: v128, y1: v128): v128 {
  return fma(v128.load(x, 16), y1, f32x4.mul(v128.load(x), y0));
}

@inline function lane(v: v128, l: i32): v128 {
  if (l == 0) return f32x4.shuffle(v, v, 0, 0, 0, 0);
  if (l == 1) return f32x4.shuffle(v, v, 1, 1, 1, 1);
  if (l == 2) return f32x4.shuffle(v, v, 2, 2, 2, 2);
  return f32x4.shuffle(v, v, 3, 3, 3, 3);
}

/** Lanes at or past `rem` set to −∞. */
@inline function maskTail(v: v128, rem: i32): v128 {
  const idx = i32x4(0, 1, 2, 3);
  return v128.bitselect(v, f32x4.splat(-Infinity), i32x4.lt_s(idx, i32x4.splat(rem)));
}

/**
 * softmax_scores for heads of 8 with `q0`, `q1` already scaled: scratch[i] = e^(s_i − max) for the keys
 * start + i ≤ pos, padded with zeros to a multiple of four; returns 1 / their sum.
 */
@inline function softmax_scores8(q0: v128, q1: v128, K: usize, kvDim: i32, kvo: i32, start: i32, pos: i32, scratch: usize): f32 {
  const n = pos - start + 1, stride = <usize>kvDim << 2;
  let vmx = f32x4.splat(-Infinity);
  let kb = K + (<usize>(start * kvDim + kvo) << 2);
  const zero = f32x4.splat(0);
  let i = 0;
  for (; i + 4 <= n; i += 4) {
    const s = reduce4(part8(kb, q0, q1), part8(kb + stride, q0, q1), part8(kb + 2 * stride, q0, q1), part8(kb + 3 * stride, q0, q1));
    v128.store(scratch + (<usize>i << 2), s);
    vmx = f32x4.max(vmx, s);
    kb += 4 * stride;
  }
  if (i < n) {
    // the last one to three keys, the other lanes −∞
    const rem = n - i;
    const b = rem > 1 ? part8(kb + stride, q0, q1) : zero;
    const c = rem > 2 ? part8(kb + 2 * stride, q0, q1) : zero;
    const s = maskTail(reduce4(part8(kb, q0, q1), b, c, zero), rem);
    v128.store(scratch + (<usize>i << 2), s);
    vmx = f32x4.max(vmx, s);
  }
  const mx = max(max(f32x4.extract_lane(vmx, 0), f32x4.extract_lane(vmx, 1)), max(f32x4.extract_lane(vmx, 2), f32x4.extract_lane(vmx, 3)));
  const m4 = f32x4.splat(mx);
  // e^(s − max): exp4 of common.ts, bit for bit for finite inputs (s − max ≤ 0, so only its lower clamp can act; a
  // relaxed max, one instruction, where f32x4.max takes several), with the rounding to an integer done by adding
  // 1.5·2^23 and the integer read from the sum's low bits (instead of nearest + trunc_sat)
  const lo = v128.load(EXP4_C, 16), log2e = v128.load(EXP4_C, 32), magic = v128.load(EXP4_C, 176), ln2hi = v128.load(EXP4_C, 48), ln2lo = v128.load(EXP4_C, 64);
  const c6 = v128.load(EXP4_C, 80), c5 = v128.load(EXP4_C, 96), c4 = v128.load(EXP4_C, 112), c3 = v128.load(EXP4_C, 128), c2 = v128.load(EXP4_C, 144), c1 = v128.load(EXP4_C, 160);
  const bias = i32x4.sub(i32x4.splat(127), magic);
  let acc = zero;
  for (let i = 0; i < n; i += 4) {
    const at = scratch + (<usize>i << 2);
    const x = f32x4.relaxed_max(f32x4.sub(v128.load(at), m4), lo);
    const t = f32x4.add(f32x4.mul(x, log2e), magic);
    const k = f32x4.sub(t, magic);
    const r = f32x4.sub(f32x4.sub(x, f32x4.mul(k, ln2hi)), f32x4.mul(k, ln2lo));
    let p = fma(c6, r, c5);
    p = fma(p, r, c4);
    p = fma(p, r, c3);
    p = fma(p, r, c2);
    p = fma(p, r, c1);
    p = fma(p, r, c1);
    // bits(t) = bits(1.5·2^23) + k, and 2^k = (k + 127) << 23
    const e = f32x4.mul(p, i32x4.shl(i32x4.add(t, bias), 23));
    v128.store(at, e);
    acc = f32x4.add(acc, e);
  }
  return 1 / hsum(acc);
}

function attention8(qkv: usize, ldq: i32, out: usize, table: usize, p0: i32, p1: i32, nHeads: i32, nKv: i32, window: i32, scale: f32, scratch: usize): void {
  if (nHeads == 2 * nKv) { attention8x2(qkv, ldq, out, table, p0, p1, nKv, window, scale, scratch); return; }
  const group = nHeads / nKv;
  const kvDim = nKv * 8;
  const vscale = f32x4.splat(scale);
  const stride = <usize>kvDim << 2;
  for (let p = p0; p < p1; p++) {
    const r = p / nHeads, h = p % nHeads;
    const t = table + (<usize>(r * 3) << 2);
    const K = <usize>load<u32>(t), V = <usize>load<u32>(t, 4), pos = load<i32>(t, 8);
    const start = window > 0 ? max(0, pos - window + 1) : 0;
    const q = qkv + (<usize>(r * ldq + h * 8) << 2);
    const kvo = (h / group) * 8;
    const inv = softmax_scores8(f32x4.mul(v128.load(q), vscale), f32x4.mul(v128.load(q, 16), vscale), K, kvDim, kvo, start, pos, scratch);
    const n = pos - start + 1;
    let o0 = f32x4.splat(0), o1 = f32x4.splat(0);
    let vb = V + (<usize>(start * kvDim + kvo) << 2);
    let i = 0;
    for (; i + 4 <= n; i += 4) {
      const w = v128.load(scratch + (<usize>i << 2));
      let x = lane(w, 0);
      o0 = fma(x, v128.load(vb), o0); o1 = fma(x, v128.load(vb, 16), o1);
      x = lane(w, 1);
      o0 = fma(x, v128.load(vb + stride), o0); o1 = fma(x, v128.load(vb + stride, 16), o1);
      x = lane(w, 2);
      o0 = fma(x, v128.load(vb + 2 * stride), o0); o1 = fma(x, v128.load(vb + 2 * stride, 16), o1);
      x = lane(w, 3);
      o0 = fma(x, v128.load(vb + 3 * stride), o0); o1 = fma(x, v128.load(vb + 3 * stride, 16), o1);
      vb += 4 * stride;
    }
    for (; i < n; i++) {
      const x = v128.load32_splat(scratch + (<usize>i << 2));
      o0 = fma(x, v128.load(vb), o0); o1 = fma(x, v128.load(vb, 16), o1);
      vb += stride;
    }
    const vinv = f32x4.splat(inv);
    const o = out + (<usize>(r * nHeads * 8 + h * 8) << 2);
    v128.store(o, f32x4.mul(o0, vinv));
    v128.store(o, f32x4.mul(o1, vinv), 16);
  }
}

function attention_backward8(dq: usize, lddq: i32, dout: usize, out: usize, q: usize, ldq: i32, table: usize, segs: usize, p0: i32, p1: i32, nHeads: i32, nKv: i32, window: i32, scale: f32, scratch: usize): void {
  if (nHeads == 2 * nKv) { attention_backward8x2(dq, lddq, dout, out, q, ldq, table, segs, p0, p1, nKv, window, scale, scratch); return; }
  const group = nHeads / nKv;
  const kvDim = nKv * 8;
  const qDim = nHeads * 8;
  const stride = <usize>kvDim << 2;
  const vscale = f32x4.splat(scale), zero = f32x4.splat(0);
  for (let p = p0; p < p1; p++) {
    const seq = p / nKv, kvh = p % nKv;
    const row0 = load<i32>(segs + (<usize>(seq * 2) << 2)), rows = load<i32>(segs + (<usize>(seq * 2 + 1) << 2));
    const kvo = kvh * 8;
    for (let r = row0; r < row0 + rows; r++) {
      const t = table + (<usize>(r * 5) << 2);
      const K = <usize>load<u32>(t), V = <usize>load<u32>(t, 4), dK = <usize>load<u32>(t, 8), dV = <usize>load<u32>(t, 12), pos = load<i32>(t, 16);
      const start = window > 0 ? max(0, pos - window + 1) : 0;
      const n = pos - start + 1;
      const first = <usize>(start * kvDim + kvo) << 2;
      for (let h = kvh * group; h < (kvh + 1) * group; h++) {
        const qh = q + (<usize>(r * ldq + h * 8) << 2);
        const oh = out + (<usize>(r * qDim + h * 8) << 2);
        const doh = dout + (<usize>(r * qDim + h * 8) << 2);
        const q0 = v128.load(qh), q1 = v128.load(qh, 16);
        const inv = softmax_scores8(f32x4.mul(q0, vscale), f32x4.mul(q1, vscale), K, kvDim, kvo, start, pos, scratch);
        const g0 = v128.load(doh), g1 = v128.load(doh, 16);
        const vD = f32x4.splat(hsum(fma(v128.load(oh, 16), g1, f32x4.mul(v128.load(oh), g0))));
        // dS_j·scale-ready: scale q's contribution to dK and k's to dq once, below
        const qs0 = f32x4.mul(q0, vscale), qs1 = f32x4.mul(q1, vscale);
        const vinv = f32x4.splat(inv);
        let dq0 = zero, dq1 = zero;
        let kb = K + first, vb = V + first, dkb = dK + first, dvb = dV + first;
        for (let i = 0; i < n; i += 4) {
          const rem = n - i;
          const P = f32x4.mul(v128.load(scratch + (<usize>i << 2)), vinv);
          const a = part8(vb, g0, g1);
          const b = rem > 1 ? part8(vb + stride, g0, g1) : zero;
          const c = rem > 2 ? part8(vb + 2 * stride, g0, g1) : zero;
          const d = rem > 3 ? part8(vb + 3 * stride, g0, g1) : zero;
          // dS = P (dP − D); the scale is in qs (for dK) and applied to dq at the end
          const dS = f32x4.mul(P, f32x4.sub(reduce4(a, b, c, d), vD));
          if (rem >= 4) {
            let pl = lane(P, 0), sl = lane(dS, 0);
            v128.store(dvb, fma(pl, g0, v128.load(dvb))); v128.store(dvb, fma(pl, g1, v128.load(dvb, 16)), 16);
            dq0 = fma(sl, v128.load(kb), dq0); dq1 = fma(sl, v128.load(kb, 16), dq1);
            v128.store(dkb, fma(sl, qs0, v128.load(dkb))); v128.store(dkb, fma(sl, qs1, v128.load(dkb, 16)), 16);
            let o = stride;
            pl = lane(P, 1); sl = lane(dS, 1);
            v128.store(dvb + o, fma(pl, g0, v128.load(dvb + o))); v128.store(dvb + o, fma(pl, g1, v128.load(dvb + o, 16)), 16);
            dq0 = fma(sl, v128.load(kb + o), dq0); dq1 = fma(sl, v128.load(kb + o, 16), dq1);
            v128.store(dkb + o, fma(sl, qs0, v128.load(dkb + o))); v128.store(dkb + o, fma(sl, qs1, v128.load(dkb + o, 16)), 16);
            o = 2 * stride;
            pl = lane(P, 2); sl = lane(dS, 2);
            v128.store(dvb + o, fma(pl, g0, v128.load(dvb + o))); v128.store(dvb + o, fma(pl, g1, v128.load(dvb + o, 16)), 16);
            dq0 = fma(sl, v128.load(kb + o), dq0); dq1 = fma(sl, v128.load(kb + o, 16), dq1);
            v128.store(dkb + o, fma(sl, qs0, v128.load(dkb + o))); v128.store(dkb + o, fma(sl, qs1, v128.load(dkb + o, 16)), 16);
            o = 3 * stride;
            pl = lane(P, 3); sl = lane(dS, 3);
            v128.store(dvb + o, fma(pl, g0, v128.load(dvb + o))); v128.store(dvb + o, fma(pl, g1, v128.load(dvb + o, 16)), 16);
            dq0 = fma(sl, v128.load(kb + o), dq0); dq1 = fma(sl, v128.load(kb + o, 16), dq1);
            v128.store(dkb + o, fma(sl, qs0, v128.load(dkb + o))); v128.store(dkb + o, fma(sl, qs1, v128.load(dkb + o, 16)), 16);
          } else {
            // the last keys, one at a time, with the same arithmetic
            for (let l = 0; l < rem; l++) {
              const o = <usize>l * stride;
              const pl = lane(P, l), sl = lane(dS, l);
              v128.store(dvb + o, fma(pl, g0, v128.load(dvb + o))); v128.store(dvb + o, fma(pl, g1, v128.load(dvb + o, 16)), 16);
              dq0 = fma(sl, v128.load(kb + o), dq0); dq1 = fma(sl, v128.load(kb + o, 16), dq1);
              v128.store(dkb + o, fma(sl, qs0, v128.load(dkb + o))); v128.store(dkb + o, fma(sl, qs1, v128.load(dkb + o, 16)), 16);
            }
          }
          kb += 4 * stride; vb += 4 * stride; dkb += 4 * stride; dvb += 4 * stride;
        }
        const dqh = dq + (<usize>(r * lddq + h * 8) << 2);
        v128.store(dqh, f32x4.mul(dq0, vscale));
        v128.store(dqh, f32x4.mul(dq1, vscale), 16);
      }
    }
  }
}

// Two query heads per key/value head (stories260K: 8 over 4): both heads of a row in one pass over the keys, so each
// key and value is loaded once and each dK, dV row is read and written once for the pair. Scratch holds both
// heads' scores (the second list after the first, padded to four).
@inline function accumulate2(dvb: usize, dkb: usize, pa: v128, pb: v128, sa: v128, sb: v128,
  ga0: v128, ga1: v128, gb0: v128, gb1: v128, qa0: v128, qa1: v128, qb0: v128, qb1: v128): void {
  v128.store(dvb, fma(pb, gb0, fma(pa, ga0, v128.load(dvb))));
  v128.store(dvb, fma(pb, gb1, fma(pa, ga1, v128.load(dvb, 16))), 16);
  v128.store(dkb, fma(sb, qb0, fma(sa, qa0, v128.load(dkb))));
  v128.store(dkb, fma(sb, qb1, fma(sa, qa1, v128.load(dkb, 16))), 16);
}

function attention_backward8x2(dq: usize, lddq: i32, dout: usize, out: usize, q: usize, ldq: i32, table: usize, segs: usize, p0: i32, p1: i32, nKv: i32, window: i32, scale: f32, scratch: usize): void {
  const nHeads = 2 * nKv;
  const kvDim = nKv * 8;
  const qDim = nHeads * 8;
  const stride = <usize>kvDim << 2;
  const vscale = f32x4.splat(scale), zero = f32x4.splat(0);
  for (let p = p0; p < p1; p++) {
    const seq = p / nKv, kvh = p % nKv;
    const row0 = load<i32>(segs + (<usize>(seq * 2) << 2)), rows = load<i32>(segs + (<usize>(seq * 2 + 1) << 2));
    const kvo = kvh * 8;
    for (let r = row0; r < row0 + rows; r++) {
      const t = table + (<usize>(r * 5) << 2);
      const K = <usize>load<u32>(t), V = <usize>load<u32>(t, 4), dK = <usize>load<u32>(t, 8), dV = <usize>load<u32>(t, 12), pos = load<i32>(t, 16);
      const start = window > 0 ? max(0, pos - window + 1) : 0;
      const n = pos - start + 1;
      const first = <usize>(start * kvDim + kvo) << 2;
      const ha = 2 * kvh;
      const qha = q + (<usize>(r * ldq + ha * 8) << 2), qhb = qha + 32;
      const oha = out + (<usize>(r * qDim + ha * 8) << 2), ohb = oha + 32;
      const doa = dout + (<usize>(r * qDim + ha * 8) << 2), dob = doa + 32;
      const qa0 = f32x4.mul(v128.load(qha), vscale), qa1 = f32x4.mul(v128.load(qha, 16), vscale);
      const qb0 = f32x4.mul(v128.load(qhb), vscale), qb1 = f32x4.mul(v128.load(qhb, 16), vscale);
      const sa = scratch, sb = scratch + (<usize>((n + 3) & ~3) << 2);
      const inva = f32x4.splat(softmax_scores8(qa0, qa1, K, kvDim, kvo, start, pos, sa));
      const invb = f32x4.splat(softmax_scores8(qb0, qb1, K, kvDim, kvo, start, pos, sb));
      const ga0 = v128.load(doa), ga1 = v128.load(doa, 16), gb0 = v128.load(dob), gb1 = v128.load(dob, 16);
      const Da = f32x4.splat(hsum(fma(v128.load(oha, 16), ga1, f32x4.mul(v128.load(oha), ga0))));
      const Db = f32x4.splat(hsum(fma(v128.load(ohb, 16), gb1, f32x4.mul(v128.load(ohb), gb0))));
      let dqa0 = zero, dqa1 = zero, dqb0 = zero, dqb1 = zero;
      let kb = K + first, vb = V + first, dkb = dK + first, dvb = dV + first;
      for (let i = 0; i < n; i += 4) {
        const rem = n - i;
        const Pa = f32x4.mul(v128.load(sa + (<usize>i << 2)), inva), Pb = f32x4.mul(v128.load(sb + (<usize>i << 2)), invb);
        // dP of both heads against the (up to) four values, each value loaded once
        let v0 = v128.load(vb), v1 = v128.load(vb, 16);
        const a0 = fma(v1, ga1, f32x4.mul(v0, ga0)), b0 = fma(v1, gb1, f32x4.mul(v0, gb0));
        let a1 = zero, b1 = zero, a2 = zero, b2 = zero, a3 = zero, b3 = zero;
        if (rem > 1) { v0 = v128.load(vb + stride); v1 = v128.load(vb + stride, 16); a1 = fma(v1, ga1, f32x4.mul(v0, ga0)); b1 = fma(v1, gb1, f32x4.mul(v0, gb0)); }
        if (rem > 2) { v0 = v128.load(vb + 2 * stride); v1 = v128.load(vb + 2 * stride, 16); a2 = fma(v1, ga1, f32x4.mul(v0, ga0)); b2 = fma(v1, gb1, f32x4.mul(v0, gb0)); }
        if (rem > 3) { v0 = v128.load(vb + 3 * stride); v1 = v128.load(vb + 3 * stride, 16); a3 = fma(v1, ga1, f32x4.mul(v0, ga0)); b3 = fma(v1, gb1, f32x4.mul(v0, gb0)); }
        const dSa = f32x4.mul(Pa, f32x4.sub(reduce4(a0, a1, a2, a3), Da));
        const dSb = f32x4.mul(Pb, f32x4.sub(reduce4(b0, b1, b2, b3), Db));
        if (rem >= 4) {
          let xa = lane(dSa, 0), xb = lane(dSb, 0);
          accumulate2(dvb, dkb, lane(Pa, 0), lane(Pb, 0), xa, xb, ga0, ga1, gb0, gb1, qa0, qa1, qb0, qb1);
          let k0 = v128.load(kb), k1 = v128.load(kb, 16);
          dqa0 = fma(xa, k0, dqa0); dqa1 = fma(xa, k1, dqa1); dqb0 = fma(xb, k0, dqb0); dqb1 = fma(xb, k1, dqb1);
          let o = stride;
          xa = lane(dSa, 1); xb = lane(dSb, 1);
          accumulate2(dvb + o, dkb + o, lane(Pa, 1), lane(Pb, 1), xa, xb, ga0, ga1, gb0, gb1, qa0, qa1, qb0, qb1);
          k0 = v128.load(kb + o); k1 = v128.load(kb + o, 16);
          dqa0 = fma(xa, k0, dqa0); dqa1 = fma(xa, k1, dqa1); dqb0 = fma(xb, k0, dqb0); dqb1 = fma(xb, k1, dqb1);
          o = 2 * stride;
          xa = lane(dSa, 2); xb = lane(dSb, 2);
          accumulate2(dvb + o, dkb + o, lane(Pa, 2), lane(Pb, 2), xa, xb, ga0, ga1, gb0, gb1, qa0, qa1, qb0, qb1);
          k0 = v128.load(kb + o); k1 = v128.load(kb + o, 16);
          dqa0 = fma(xa, k0, dqa0); dqa1 = fma(xa, k1, dqa1); dqb0 = fma(xb, k0, dqb0); dqb1 = fma(xb, k1, dqb1);
          o = 3 * stride;
          xa = lane(dSa, 3); xb = lane(dSb, 3);
          accumulate2(dvb + o, dkb + o, lane(Pa, 3), lane(Pb, 3), xa, xb, ga0, ga1, gb0, gb1, qa0, qa1, qb0, qb1);
          k0 = v128.load(kb + o); k1 = v128.load(kb + o, 16);
          dqa0 = fma(xa, k0, dqa0); dqa1 = fma(xa, k1, dqa1); dqb0 = fma(xb, k0, dqb0); dqb1 = fma(xb, k1, dqb1);
        } else {
          // the last keys, one at a time, with the same arithmetic
          for (let l = 0; l < rem; l++) {
            const o = <usize>l * stride;
            const xa = lane(dSa, l), xb = lane(dSb, l);
            accumulate2(dvb + o, dkb + o, lane(Pa, l), lane(Pb, l), xa, xb, ga0, ga1, gb0, gb1, qa0, qa1, qb0, qb1);
            const k0 = v128.load(kb + o), k1 = v128.load(kb + o, 16);
            dqa0 = fma(xa, k0, dqa0); dqa1 = fma(xa, k1, dqa1); dqb0 = fma(xb, k0, dqb0); dqb1 = fma(xb, k1, dqb1);
          }
        }
        kb += 4 * stride; vb += 4 * stride; dkb += 4 * stride; dvb += 4 * stride;
      }
      const dqa = dq + (<usize>(r * lddq + ha * 8) << 2), dqb = dqa + 32;
      v128.store(dqa, f32x4.mul(dqa0, vscale)); v128.store(dqa, f32x4.mul(dqa1, vscale), 16);
      v128.store(dqb, f32x4.mul(dqb0, vscale)); v128.store(dqb, f32x4.mul(dqb1, vscale), 16);
    }
  }
}

// The forward with two query heads per key/value head: pair p = (row, head) with an even head computes both heads of
// its key/value head (each key and value loaded once for the two), and a pair with an odd head nothing, so however
// a job is cut into chunks every head is computed exactly once.
function attention8x2(qkv: usize, ldq: i32, out: usize, table: usize, p0: i32, p1: i32, nKv: i32, window: i32, scale: f32, scratch: usize): void {
  const nHeads = 2 * nKv;
  const kvDim = nKv * 8;
  const vscale = f32x4.splat(scale);
  const stride = <usize>kvDim << 2;
  for (let p = p0 + (p0 & 1); p < p1; p += 2) {
    const r = p / nHeads, h = p % nHeads;
    const t = table + (<usize>(r * 3) << 2);
    const K = <usize>load<u32>(t), V = <usize>load<u32>(t, 4), pos = load<i32>(t, 8);
    const start = window > 0 ? max(0, pos - window + 1) : 0;
    const n = pos - start + 1;
    const qa = qkv + (<usize>(r * ldq + h * 8) << 2), qb = qa + 32;
    const kvo = (h >> 1) * 8;
    const sa = scratch, sb = scratch + (<usize>((n + 3) & ~3) << 2);
    const inva = softmax_scores8(f32x4.mul(v128.load(qa), vscale), f32x4.mul(v128.load(qa, 16), vscale), K, kvDim, kvo, start, pos, sa);
    const invb = softmax_scores8(f32x4.mul(v128.load(qb), vscale), f32x4.mul(v128.load(qb, 16), vscale), K, kvDim, kvo, start, pos, sb);
    let a0 = f32x4.splat(0), a1 = f32x4.splat(0), b0 = f32x4.splat(0), b1 = f32x4.splat(0);
    let vb = V + (<usize>(start * kvDim + kvo) << 2);
    let i = 0;
    for (; i + 4 <= n; i += 4) {
      const wa = v128.load(sa + (<usize>i << 2)), wb = v128.load(sb + (<usize>i << 2));
      let v0 = v128.load(vb), v1 = v128.load(vb, 16);
      let x = lane(wa, 0), y = lane(wb, 0);
      a0 = fma(x, v0, a0); a1 = fma(x, v1, a1); b0 = fma(y, v0, b0); b1 = fma(y, v1, b1);
      v0 = v128.load(vb + stride); v1 = v128.load(vb + stride, 16);
      x = lane(wa, 1); y = lane(wb, 1);
      a0 = fma(x, v0, a0); a1 = fma(x, v1, a1); b0 = fma(y, v0, b0); b1 = fma(y, v1, b1);
      v0 = v128.load(vb + 2 * stride); v1 = v128.load(vb + 2 * stride, 16);
      x = lane(wa, 2); y = lane(wb, 2);
      a0 = fma(x, v0, a0); a1 = fma(x, v1, a1); b0 = fma(y, v0, b0); b1 = fma(y, v1, b1);
      v0 = v128.load(vb + 3 * stride); v1 = v128.load(vb + 3 * stride, 16);
      x = lane(wa, 3); y = lane(wb, 3);
      a0 = fma(x, v0, a0); a1 = fma(x, v1, a1); b0 = fma(y, v0, b0); b1 = fma(y, v1, b1);
      vb += 4 * stride;
    }
    for (; i < n; i++) {
      const x = v128.load32_splat(sa + (<usize>i << 2)), y = v128.load32_splat(sb + (<usize>i << 2));
      const v0 = v128.load(vb), v1 = v128.load(vb, 16);
      a0 = fma(x, v0, a0); a1 = fma(x, v1, a1); b0 = fma(y, v0, b0); b1 = fma(y, v1, b1);
      vb += stride;
    }
    const o = out + (<usize>(r * nHeads * 8 + h * 8) << 2);
    const va = f32x4.splat(inva), vbi = f32x4.splat(invb);
    v128.store(o, f32x4.mul(a0, va)); v128.store(o, f32x4.mul(a1, va), 16);
    v128.store(o, f32x4.mul(b0, vbi), 32); v128.store(o, f32x4.mul(b1, vbi), 48);
  }
}
