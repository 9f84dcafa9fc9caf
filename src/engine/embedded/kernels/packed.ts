// Frozen weights packed for the forward GEMM: W [rows = out, cols = in] becomes panels of 8 rows,
// P[p][k][j] = W[8p + j][k], the last panel zero-padded. See assembly/packed.ts (gemm_packed).
// A panel holds float32 values, or bfloat16 ones (`--weights-dtype bf16`: half the memory and
// half the bytes read per decoded token); the kernels widen bfloat16 to float32 exactly and
// accumulate in float32, so a bf16 model computes what a float32 model of the rounded weights does.

export type WeightsDtype = 'f32' | 'bf16';

export interface PackedMatrix {
  /** the panels: ceil(rows / 8) · cols · 8 values, float32, or bfloat16 two to a float slot */
  data: Float32Array;
  rows: number;
  cols: number;
  /** absent: float32 */
  dtype?: WeightsDtype;
}

export function packedLength(rows: number, cols: number): number {
  return Math.ceil(rows / 8) * cols * 8;
}

/** Float slots that hold the panels of a [rows × cols] matrix of `dtype`. */
export function packedSlots(rows: number, cols: number, dtype: WeightsDtype = 'f32'): number {
  return dtype === 'bf16' ? Math.ceil(packedLength(rows, cols) / 2) : packedLength(rows, cols);
}

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

/** float32 → bfloat16 bits, rounded to nearest even (NaN stays NaN). */
export function bf16Bits(x: number): number {
  f32[0] = x;
  const b = u32[0];
  if ((b & 0x7fffffff) > 0x7f800000) return ((b >>> 16) | 0x40) & 0xffff;
  return ((b + 0x7fff + ((b >>> 16) & 1)) >>> 16) & 0xffff;
}

/** bfloat16 bits → the float32 value (exact). */
export function bf16Value(bits: number): number {
  u32[0] = bits << 16;
  return f32[0];
}

function halves(w: PackedMatrix): Uint16Array {
  return new Uint16Array(w.data.buffer, w.data.byteOffset, w.data.length * 2);
}

/**
 * Pack row-major `w` [rows × cols] into `out` (of packedSlots floats, zeroed padding), as `dtype`;
 * with `row0`, `w` holds rows [row0, row0 + rows) of the matrix (loading packs in slices).
 */
export function packPanels(w: Float32Array, rows: number, cols: number, out: Float32Array, dtype: WeightsDtype = 'f32', row0 = 0): void {
  const h = dtype === 'bf16' ? new Uint16Array(out.buffer, out.byteOffset, out.length * 2) : null;
  for (let r = 0; r < rows; r++) {
    const g = row0 + r;
    const base = Math.floor(g / 8) * cols * 8 + (g % 8);
    if (h) for (let k = 0; k < cols; k++) h[base + k * 8] = bf16Bits(w[r * cols + k]);
    else for (let k = 0; k < cols; k++) out[base + k * 8] = w[r * cols + k];
  }
}

/** W[row, ·] out of the packed layout (embedding lookups from a tied LM head). */
export function unpackRow(w: PackedMatrix, row: number, dst: Float32Array, dstOff = 0): void {
  const base = Math.floor(row / 8) * w.cols * 8 + (row % 8);
  if (w.dtype === 'bf16') {
    const h = halves(w);
    for (let k = 0; k < w.cols; k++) dst[dstOff + k] = bf16Value(h[base + k * 8]);
  } else for (let k = 0; k < w.cols; k++) dst[dstOff + k] = w.data[base + k * 8];
}

/** W[row, k] of the packed layout. */
export function packedAt(w: PackedMatrix, row: number, k: number): number {
  const i = Math.floor(row / 8) * w.cols * 8 + k * 8 + (row % 8);
  return w.dtype === 'bf16' ? bf16Value(halves(w)[i]) : w.data[i];
}
