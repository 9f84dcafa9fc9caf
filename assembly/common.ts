// Shared SIMD helpers of the engine's WebAssembly kernels (see kernels.ts).

@inline export function fma(a: v128, b: v128, c: v128): v128 {
  return f32x4.relaxed_madd(a, b, c);
}

@inline export function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3);
}

@inline export function put(c: usize, v: f32, acc: i32): void {
  if (acc) store<f32>(c, load<f32>(c) + v);
  else store<f32>(c, v);
}

@inline export function dot(x: usize, y: usize, K: i32): f32 {
  const K4 = K & ~3;
  let s = f32x4.splat(0);
  for (let k = 0; k < K4; k += 4) s = fma(v128.load(x + (<usize>k << 2)), v128.load(y + (<usize>k << 2)), s);
  let r = hsum(s);
  for (let k = K4; k < K; k++) r += load<f32>(x + (<usize>k << 2)) * load<f32>(y + (<usize>k << 2));
  return r;
}

/**
 * Σ_k x[k]·y[k] as four independent chains (16 floats a step; attention's head dims are 64-128 long and
 * one chain would wait on each fused multiply-add's latency), then chunks of 4 into the first chain and
 * a scalar tail; the chains are added in a fixed order.
 */
@inline export function dot4(x: usize, y: usize, K: i32): f32 {
  let s0 = f32x4.splat(0), s1 = f32x4.splat(0), s2 = f32x4.splat(0), s3 = f32x4.splat(0);
  let k = 0;
  for (; k + 16 <= K; k += 16) {
    const o = <usize>k << 2;
    s0 = fma(v128.load(x + o), v128.load(y + o), s0);
    s1 = fma(v128.load(x + o, 16), v128.load(y + o, 16), s1);
    s2 = fma(v128.load(x + o, 32), v128.load(y + o, 32), s2);
    s3 = fma(v128.load(x + o, 48), v128.load(y + o, 48), s3);
  }
  for (; k + 4 <= K; k += 4) s0 = fma(v128.load(x + (<usize>k << 2)), v128.load(y + (<usize>k << 2)), s0);
  let r = hsum(f32x4.add(f32x4.add(s0, s1), f32x4.add(s2, s3)));
  for (; k < K; k++) r += load<f32>(x + (<usize>k << 2)) * load<f32>(y + (<usize>k << 2));
  return r;
}

@inline export function put4(p: usize, v0: v128, v1: v128, v2: v128, v3: v128, acc: i32): void {
  if (acc) {
    v0 = f32x4.add(v0, v128.load(p)); v1 = f32x4.add(v1, v128.load(p, 16));
    v2 = f32x4.add(v2, v128.load(p, 32)); v3 = f32x4.add(v3, v128.load(p, 48));
  }
  v128.store(p, v0); v128.store(p, v1, 16); v128.store(p, v2, 32); v128.store(p, v3, 48);
}

/** y[0..n) += a·x[0..n) */
@inline export function axpy(y: usize, x: usize, a: f32, n: i32): void {
  const n4 = n & ~3;
  const va = f32x4.splat(a);
  for (let d = 0; d < n4; d += 4) {
    const o = <usize>d << 2;
    v128.store(y + o, fma(va, v128.load(x + o), v128.load(y + o)));
  }
  for (let d = n4; d < n; d++) store<f32>(y + (<usize>d << 2), load<f32>(y + (<usize>d << 2)) + a * load<f32>(x + (<usize>d << 2)));
}

// e^x for four lanes: x = n·ln2 + r with |r| ≤ ln2/2, e^r by its degree-6 Taylor polynomial
// (relative error < 2e-7 on that interval), 2^n built in the exponent bits. Inputs are clamped to
// the float32 range of e^x. The constants are read from memory: as v128.const inside a loop V8 rebuilds
// each one on every iteration, and loads are cheaper (the values, and so the results, are the same).
// The last row, 1.5·2^23, is attention.ts's rounding constant (its exp takes the rest of this table too).
export const EXP4_C = memory.data<f32>([
  88.3762626647949, 88.3762626647949, 88.3762626647949, 88.3762626647949,
  -87.3365478515625, -87.3365478515625, -87.3365478515625, -87.3365478515625,
  1.44269504088896341, 1.44269504088896341, 1.44269504088896341, 1.44269504088896341,
  0.693359375, 0.693359375, 0.693359375, 0.693359375,
  -2.12194440e-4, -2.12194440e-4, -2.12194440e-4, -2.12194440e-4,
  1.0 / 720.0, 1.0 / 720.0, 1.0 / 720.0, 1.0 / 720.0,
  1.0 / 120.0, 1.0 / 120.0, 1.0 / 120.0, 1.0 / 120.0,
  1.0 / 24.0, 1.0 / 24.0, 1.0 / 24.0, 1.0 / 24.0,
  1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0, 1.0 / 6.0,
  0.5, 0.5, 0.5, 0.5,
  1.0, 1.0, 1.0, 1.0,
  12582912.0, 12582912.0, 12582912.0, 12582912.0,
], 16);

@inline export function exp4(x: v128): v128 {
  const c = EXP4_C;
  x = f32x4.max(f32x4.min(x, v128.load(c)), v128.load(c, 16));
  const n = f32x4.nearest(f32x4.mul(x, v128.load(c, 32)));
  let r = f32x4.sub(x, f32x4.mul(n, v128.load(c, 48)));
  r = f32x4.sub(r, f32x4.mul(n, v128.load(c, 64)));
  let p = v128.load(c, 80);
  p = fma(p, r, v128.load(c, 96));
  p = fma(p, r, v128.load(c, 112));
  p = fma(p, r, v128.load(c, 128));
  p = fma(p, r, v128.load(c, 144));
  p = fma(p, r, v128.load(c, 160));
  p = fma(p, r, v128.load(c, 160));
  const pow2n = i32x4.shl(i32x4.add(i32x4.trunc_sat_f32x4_s(n), i32x4.splat(127)), 23);
  return f32x4.mul(p, pow2n);
}
