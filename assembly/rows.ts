// Row-wise element operations: log-sum-exp and softmax gradients of logits, SwiGLU.
import { exp4, hsum } from './common';

// Row-wise log-sum-exp of logits/T for rows [r0, r1) of a [rows × V] block: lse[r] = log Σ_v e^(x_v/T).
export function rows_lse(logits: usize, r0: i32, r1: i32, V: i32, invT: f32, lse: usize): void {
  const V4 = V & ~3;
  for (let r = r0; r < r1; r++) {
    const row = logits + (<usize>(r * V) << 2);
    let vm = f32x4.splat(-Infinity);
    for (let v = 0; v < V4; v += 4) vm = f32x4.max(vm, v128.load(row + (<usize>v << 2)));
    let mx = max(max(f32x4.extract_lane(vm, 0), f32x4.extract_lane(vm, 1)), max(f32x4.extract_lane(vm, 2), f32x4.extract_lane(vm, 3)));
    for (let v = V4; v < V; v++) mx = max(mx, load<f32>(row + (<usize>v << 2)));
    const m = mx * invT;
    const vT = f32x4.splat(invT), vmT = f32x4.splat(m);
    let acc = f32x4.splat(0);
    for (let v = 0; v < V4; v += 4) acc = f32x4.add(acc, exp4(f32x4.sub(f32x4.mul(v128.load(row + (<usize>v << 2)), vT), vmT)));
    let s = hsum(acc);
    for (let v = V4; v < V; v++) s += Mathf.exp(load<f32>(row + (<usize>v << 2)) * invT - m);
    store<f32>(lse + (<usize>r << 2), m + Mathf.log(s));
  }
}

// Overwrites rows [r0, r1) of logits with −coef[r]·softmax(x/T): the gradient of coef[r]·logp
// with respect to the logits, except the +coef[r] at the target (the caller adds it).
export function rows_softmax_grad(logits: usize, r0: i32, r1: i32, V: i32, invT: f32, lse: usize, coef: usize): void {
  const V4 = V & ~3;
  for (let r = r0; r < r1; r++) {
    const row = logits + (<usize>(r * V) << 2);
    const c = load<f32>(coef + (<usize>r << 2)), l = load<f32>(lse + (<usize>r << 2));
    const vT = f32x4.splat(invT), vl = f32x4.splat(l), vc = f32x4.splat(-c);
    for (let v = 0; v < V4; v += 4) {
      const p = row + (<usize>v << 2);
      v128.store(p, f32x4.mul(vc, exp4(f32x4.sub(f32x4.mul(v128.load(p), vT), vl))));
    }
    for (let v = V4; v < V; v++) {
      const p = row + (<usize>v << 2);
      store<f32>(p, -c * Mathf.exp(load<f32>(p) * invT - l));
    }
  }
}

// SwiGLU over rows [r0, r1) of the fused [gate | up] activations: out = silu(g)·u, and its backward
// dg = dout·u·σ(g)(1 + g(1 − σ(g))), du = dout·silu(g).
export function swiglu(out: usize, gu: usize, r0: i32, r1: i32, I: i32): void {
  const I4 = I & ~3;
  const one = f32x4.splat(1);
  for (let r = r0; r < r1; r++) {
    const g0 = gu + (<usize>(r * 2 * I) << 2), u0 = g0 + (<usize>I << 2), o0 = out + (<usize>(r * I) << 2);
    for (let i = 0; i < I4; i += 4) {
      const o = <usize>i << 2;
      const g = v128.load(g0 + o);
      const sig = f32x4.div(one, f32x4.add(one, exp4(f32x4.neg(g))));
      v128.store(o0 + o, f32x4.mul(f32x4.mul(g, sig), v128.load(u0 + o)));
    }
    for (let i = I4; i < I; i++) {
      const o = <usize>i << 2;
      const g = load<f32>(g0 + o);
      store<f32>(o0 + o, (g / (1 + Mathf.exp(-g))) * load<f32>(u0 + o));
    }
  }
}

export function swiglu_backward(dgu: usize, dout: usize, gu: usize, r0: i32, r1: i32, I: i32): void {
  const I4 = I & ~3;
  const one = f32x4.splat(1);
  for (let r = r0; r < r1; r++) {
    const g0 = gu + (<usize>(r * 2 * I) << 2), u0 = g0 + (<usize>I << 2), d0 = dout + (<usize>(r * I) << 2);
    const dg0 = dgu + (<usize>(r * 2 * I) << 2), du0 = dg0 + (<usize>I << 2);
    for (let i = 0; i < I4; i += 4) {
      const o = <usize>i << 2;
      const g = v128.load(g0 + o), u = v128.load(u0 + o), d = v128.load(d0 + o);
      const sig = f32x4.div(one, f32x4.add(one, exp4(f32x4.neg(g))));
      v128.store(dg0 + o, f32x4.mul(f32x4.mul(f32x4.mul(d, u), sig), f32x4.add(one, f32x4.mul(g, f32x4.sub(one, sig)))));
      v128.store(du0 + o, f32x4.mul(d, f32x4.mul(g, sig)));
    }
    for (let i = I4; i < I; i++) {
      const o = <usize>i << 2;
      const g = load<f32>(g0 + o), u = load<f32>(u0 + o), d = load<f32>(d0 + o);
      const sig: f32 = 1 / (1 + Mathf.exp(-g));
      store<f32>(dg0 + o, d * u * sig * (1 + g * (1 - sig)));
      store<f32>(du0 + o, d * g * sig);
    }
  }
}
