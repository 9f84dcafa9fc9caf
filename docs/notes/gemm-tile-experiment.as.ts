@inline function fma(a: v128, b: v128, c: v128): v128 { return f32x4.relaxed_madd(a, b, c); }
@inline function hsum(v: v128): f32 { return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3); }
// 3 rows of A x 4 rows of B: 12 accumulators + 3 A + 1 B live
export function nt34(a: usize, b: usize, c: usize, M: i32, N: i32, K: i32): void {
  for (let m = 0; m + 3 <= M; m += 3) {
    const a0 = a + (<usize>(m * K) << 2), a1 = a0 + (<usize>K << 2), a2 = a1 + (<usize>K << 2);
    for (let n = 0; n + 4 <= N; n += 4) {
      const b0 = b + (<usize>(n * K) << 2), b1 = b0 + (<usize>K << 2), b2 = b1 + (<usize>K << 2), b3 = b2 + (<usize>K << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c02 = f32x4.splat(0), c03 = f32x4.splat(0);
      let c10 = f32x4.splat(0), c11 = f32x4.splat(0), c12 = f32x4.splat(0), c13 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c22 = f32x4.splat(0), c23 = f32x4.splat(0);
      for (let k = 0; k < K; k += 4) {
        const o = <usize>k << 2;
        const x0 = v128.load(a0 + o), x1 = v128.load(a1 + o), x2 = v128.load(a2 + o);
        let y = v128.load(b0 + o); c00 = fma(x0, y, c00); c10 = fma(x1, y, c10); c20 = fma(x2, y, c20);
        y = v128.load(b1 + o); c01 = fma(x0, y, c01); c11 = fma(x1, y, c11); c21 = fma(x2, y, c21);
        y = v128.load(b2 + o); c02 = fma(x0, y, c02); c12 = fma(x1, y, c12); c22 = fma(x2, y, c22);
        y = v128.load(b3 + o); c03 = fma(x0, y, c03); c13 = fma(x1, y, c13); c23 = fma(x2, y, c23);
      }
      const r0 = c + (<usize>(m * N + n) << 2), r1 = r0 + (<usize>N << 2), r2 = r1 + (<usize>N << 2);
      store<f32>(r0, hsum(c00)); store<f32>(r0, hsum(c01), 4); store<f32>(r0, hsum(c02), 8); store<f32>(r0, hsum(c03), 12);
      store<f32>(r1, hsum(c10)); store<f32>(r1, hsum(c11), 4); store<f32>(r1, hsum(c12), 8); store<f32>(r1, hsum(c13), 12);
      store<f32>(r2, hsum(c20)); store<f32>(r2, hsum(c21), 4); store<f32>(r2, hsum(c22), 8); store<f32>(r2, hsum(c23), 12);
    }
  }
}
// NN-style broadcast kernel on pre-transposed B (Bt[K][N]): 4 rows x 8 cols (2 vectors): 8 acc
export function nn48(a: usize, bt: usize, c: usize, M: i32, N: i32, K: i32): void {
  for (let m = 0; m + 4 <= M; m += 4) {
    const a0 = a + (<usize>(m * K) << 2), a1 = a0 + (<usize>K << 2), a2 = a1 + (<usize>K << 2), a3 = a2 + (<usize>K << 2);
    for (let n = 0; n + 8 <= N; n += 8) {
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c30 = f32x4.splat(0), c31 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = bt + (<usize>(k * N + n) << 2);
        const y0 = v128.load(bk), y1 = v128.load(bk, 16);
        const o = <usize>k << 2;
        let x = v128.load32_splat(a0 + o); c00 = fma(x, y0, c00); c01 = fma(x, y1, c01);
        x = v128.load32_splat(a1 + o); c10 = fma(x, y0, c10); c11 = fma(x, y1, c11);
        x = v128.load32_splat(a2 + o); c20 = fma(x, y0, c20); c21 = fma(x, y1, c21);
        x = v128.load32_splat(a3 + o); c30 = fma(x, y0, c30); c31 = fma(x, y1, c31);
      }
      const r = c + (<usize>(m * N + n) << 2);
      v128.store(r, c00); v128.store(r, c01, 16);
      v128.store(r + (<usize>N << 2), c10); v128.store(r + (<usize>N << 2), c11, 16);
      v128.store(r + (<usize>(2 * N) << 2), c20); v128.store(r + (<usize>(2 * N) << 2), c21, 16);
      v128.store(r + (<usize>(3 * N) << 2), c30); v128.store(r + (<usize>(3 * N) << 2), c31, 16);
    }
  }
}
// 6 rows x 8 cols broadcast: 12 acc + 2 B + 1 bcast = 15 regs
export function nn68(a: usize, bt: usize, c: usize, M: i32, N: i32, K: i32): void {
  for (let m = 0; m + 6 <= M; m += 6) {
    const a0 = a + (<usize>(m * K) << 2);
    const s = <usize>K << 2;
    for (let n = 0; n + 8 <= N; n += 8) {
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c30 = f32x4.splat(0), c31 = f32x4.splat(0);
      let c40 = f32x4.splat(0), c41 = f32x4.splat(0), c50 = f32x4.splat(0), c51 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = bt + (<usize>(k * N + n) << 2);
        const y0 = v128.load(bk), y1 = v128.load(bk, 16);
        const o = a0 + (<usize>k << 2);
        let x = v128.load32_splat(o); c00 = fma(x, y0, c00); c01 = fma(x, y1, c01);
        x = v128.load32_splat(o + s); c10 = fma(x, y0, c10); c11 = fma(x, y1, c11);
        x = v128.load32_splat(o + 2 * s); c20 = fma(x, y0, c20); c21 = fma(x, y1, c21);
        x = v128.load32_splat(o + 3 * s); c30 = fma(x, y0, c30); c31 = fma(x, y1, c31);
        x = v128.load32_splat(o + 4 * s); c40 = fma(x, y0, c40); c41 = fma(x, y1, c41);
        x = v128.load32_splat(o + 5 * s); c50 = fma(x, y0, c50); c51 = fma(x, y1, c51);
      }
      const r = c + (<usize>(m * N + n) << 2), t = <usize>N << 2;
      v128.store(r, c00); v128.store(r, c01, 16); v128.store(r + t, c10); v128.store(r + t, c11, 16);
      v128.store(r + 2 * t, c20); v128.store(r + 2 * t, c21, 16); v128.store(r + 3 * t, c30); v128.store(r + 3 * t, c31, 16);
      v128.store(r + 4 * t, c40); v128.store(r + 4 * t, c41, 16); v128.store(r + 5 * t, c50); v128.store(r + 5 * t, c51, 16);
    }
  }
}
// B packed as panels: panel p holds columns [8p, 8p+8) for every k, contiguous: bp[p][k][8]
export function nn68p(a: usize, bp: usize, c: usize, M: i32, N: i32, K: i32): void {
  const s = <usize>K << 2;
  for (let n = 0; n + 8 <= N; n += 8) {
    const panel = bp + (<usize>(n * K) << 2);
    for (let m = 0; m + 6 <= M; m += 6) {
      const a0 = a + (<usize>(m * K) << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c30 = f32x4.splat(0), c31 = f32x4.splat(0);
      let c40 = f32x4.splat(0), c41 = f32x4.splat(0), c50 = f32x4.splat(0), c51 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = panel + (<usize>(k * 8) << 2);
        const y0 = v128.load(bk), y1 = v128.load(bk, 16);
        const o = a0 + (<usize>k << 2);
        let x = v128.load32_splat(o); c00 = fma(x, y0, c00); c01 = fma(x, y1, c01);
        x = v128.load32_splat(o + s); c10 = fma(x, y0, c10); c11 = fma(x, y1, c11);
        x = v128.load32_splat(o + 2 * s); c20 = fma(x, y0, c20); c21 = fma(x, y1, c21);
        x = v128.load32_splat(o + 3 * s); c30 = fma(x, y0, c30); c31 = fma(x, y1, c31);
        x = v128.load32_splat(o + 4 * s); c40 = fma(x, y0, c40); c41 = fma(x, y1, c41);
        x = v128.load32_splat(o + 5 * s); c50 = fma(x, y0, c50); c51 = fma(x, y1, c51);
      }
      const r = c + (<usize>(m * N + n) << 2), t = <usize>N << 2;
      v128.store(r, c00); v128.store(r, c01, 16); v128.store(r + t, c10); v128.store(r + t, c11, 16);
      v128.store(r + 2 * t, c20); v128.store(r + 2 * t, c21, 16); v128.store(r + 3 * t, c30); v128.store(r + 3 * t, c31, 16);
      v128.store(r + 4 * t, c40); v128.store(r + 4 * t, c41, 16); v128.store(r + 5 * t, c50); v128.store(r + 5 * t, c51, 16);
    }
  }
}
// 4 rows x 12 cols, packed panels of 12
export function nn4c(a: usize, bp: usize, c: usize, M: i32, N: i32, K: i32): void {
  const s = <usize>K << 2;
  for (let n = 0; n + 12 <= N; n += 12) {
    const panel = bp + (<usize>(n * K) << 2);
    for (let m = 0; m + 4 <= M; m += 4) {
      const a0 = a + (<usize>(m * K) << 2);
      let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c02 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0), c12 = f32x4.splat(0);
      let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c22 = f32x4.splat(0), c30 = f32x4.splat(0), c31 = f32x4.splat(0), c32 = f32x4.splat(0);
      for (let k = 0; k < K; k++) {
        const bk = panel + (<usize>(k * 12) << 2);
        const y0 = v128.load(bk), y1 = v128.load(bk, 16), y2 = v128.load(bk, 32);
        const o = a0 + (<usize>k << 2);
        let x = v128.load32_splat(o); c00 = fma(x, y0, c00); c01 = fma(x, y1, c01); c02 = fma(x, y2, c02);
        x = v128.load32_splat(o + s); c10 = fma(x, y0, c10); c11 = fma(x, y1, c11); c12 = fma(x, y2, c12);
        x = v128.load32_splat(o + 2 * s); c20 = fma(x, y0, c20); c21 = fma(x, y1, c21); c22 = fma(x, y2, c22);
        x = v128.load32_splat(o + 3 * s); c30 = fma(x, y0, c30); c31 = fma(x, y1, c31); c32 = fma(x, y2, c32);
      }
      const r = c + (<usize>(m * N + n) << 2), t = <usize>N << 2;
      v128.store(r, c00); v128.store(r, c01, 16); v128.store(r, c02, 32);
      v128.store(r + t, c10); v128.store(r + t, c11, 16); v128.store(r + t, c12, 32);
      v128.store(r + 2 * t, c20); v128.store(r + 2 * t, c21, 16); v128.store(r + 2 * t, c22, 32);
      v128.store(r + 3 * t, c30); v128.store(r + 3 * t, c31, 16); v128.store(r + 3 * t, c32, 32);
    }
  }
}
