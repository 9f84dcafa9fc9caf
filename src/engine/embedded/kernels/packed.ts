// Frozen weights packed for the forward GEMM: W [rows = out, cols = in] becomes panels of 8 rows,
// P[p][k][j] = W[8p + j][k], the last panel zero-padded. See assembly/packed.ts (gemm_packed).
// A panel holds float32 values, bfloat16 ones (`--weights-dtype bf16`: half the memory and half
// the bytes read per decoded token) or int8 ones with one float32 scale per output row
// (`--weights-dtype int8`: a quarter). The kernels widen bfloat16 and int8 to float32 exactly and
// accumulate in float32: a bf16 model computes what a float32 model of the rounded weights does;
// an int8 model sums Σ_k a[k]·q[n, k] over the integers and multiplies by the row's scale at the end
// (the forward product), or uses the dequantized weight q·s (the backward dX = dY·W).
//
// An int8 panel is self-contained: cols·8 signed bytes (P[p][k][j] as above), then the 8 rows'
// scales as float32 (32 bytes), so a panel is 2·cols + 8 float slots and any range of panels can be
// copied or addressed on its own (the staging window of weights outside the memory relies on it).

export type WeightsDtype = 'f32' | 'bf16' | 'int8';
export const WEIGHTS_DTYPES: readonly WeightsDtype[] = ['f32', 'bf16', 'int8'];

export interface PackedMatrix {
  /** the panels: float32, bfloat16 two to a float slot, or int8 four to a slot plus 8 scales a panel */
  data: Float32Array;
  rows: number;
  cols: number;
  /** absent: float32 */
  dtype?: WeightsDtype;
}

export function packedLength(rows: number, cols: number): number {
  return Math.ceil(rows / 8) * cols * 8;
}

/** Float slots of one 8-row panel of `cols` columns. */
export function panelSlots(cols: number, dtype: WeightsDtype = 'f32'): number {
  return dtype === 'bf16' ? cols * 4 : dtype === 'int8' ? cols * 2 + 8 : cols * 8;
}

/** Float slots that hold the panels of a [rows × cols] matrix of `dtype`. */
export function packedSlots(rows: number, cols: number, dtype: WeightsDtype = 'f32'): number {
  return Math.ceil(rows / 8) * panelSlots(cols, dtype);
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

/**
 * The int8 scale of a row: max |w| / 127 in float32 (0 for an all-zero row), so the largest weight
 * maps to ±127 and the range is symmetric (no zero point: the kernels need only one multiply).
 */
export function int8Scale(w: ArrayLike<number>, off: number, n: number): number {
  let max = 0;
  for (let k = 0; k < n; k++) max = Math.max(max, Math.abs(w[off + k]));
  return Math.fround(max / 127);
}

/** w quantized with `scale`: w / scale rounded half away from zero, clamped to [−127, 127]. */
export function int8Quantize(w: number, scale: number): number {
  if (scale === 0 || !Number.isFinite(w)) return 0;
  const r = Math.sign(w) * Math.round(Math.abs(w / scale));
  return Math.max(-127, Math.min(127, r)) || 0; // no negative zero: the stored byte has none
}

function halves(w: PackedMatrix): Uint16Array {
  return new Uint16Array(w.data.buffer, w.data.byteOffset, w.data.length * 2);
}

function bytes(w: Float32Array): Int8Array {
  return new Int8Array(w.buffer, w.byteOffset, w.length * 4);
}

/**
 * Pack row-major `w` [rows × cols] into `out` (of packedSlots floats, zeroed padding), as `dtype`;
 * with `row0`, `w` holds rows [row0, row0 + rows) of the matrix (loading packs in slices).
 */
export function packPanels(w: Float32Array, rows: number, cols: number, out: Float32Array, dtype: WeightsDtype = 'f32', row0 = 0): void {
  if (dtype === 'int8') {
    const b = bytes(out), ps = cols * 8 + 32;
    for (let r = 0; r < rows; r++) {
      const g = row0 + r, j = g % 8, panel = Math.floor(g / 8) * ps;
      const scale = int8Scale(w, r * cols, cols);
      // int8Quantize inlined (a 4B model quantizes 4·10⁹ weights at load); NaN stores as 0
      if (scale !== 0) for (let k = 0; k < cols; k++) {
        const v = w[r * cols + k] / scale, q = Math.min(127, Math.round(v < 0 ? -v : v));
        b[panel + k * 8 + j] = v < 0 ? -q : q;
      }
      out[(panel + cols * 8) / 4 + j] = scale;
    }
    return;
  }
  const h = dtype === 'bf16' ? new Uint16Array(out.buffer, out.byteOffset, out.length * 2) : null;
  for (let r = 0; r < rows; r++) {
    const g = row0 + r;
    const base = Math.floor(g / 8) * cols * 8 + (g % 8);
    if (h) for (let k = 0; k < cols; k++) h[base + k * 8] = bf16Bits(w[r * cols + k]);
    else for (let k = 0; k < cols; k++) out[base + k * 8] = w[r * cols + k];
  }
}

/** The float32 scale of row `row` of an int8 matrix. */
export function int8RowScale(w: PackedMatrix, row: number): number {
  return w.data[(Math.floor(row / 8) * (w.cols * 8 + 32) + w.cols * 8) / 4 + (row % 8)];
}

/** W[row, ·] out of the packed layout (embedding lookups from a tied LM head); int8 rows come out dequantized (q·s in float32). */
export function unpackRow(w: PackedMatrix, row: number, dst: Float32Array, dstOff = 0): void {
  if (w.dtype === 'int8') {
    const b = bytes(w.data), base = Math.floor(row / 8) * (w.cols * 8 + 32) + (row % 8), s = int8RowScale(w, row);
    for (let k = 0; k < w.cols; k++) dst[dstOff + k] = b[base + k * 8] * s;
    return;
  }
  const base = Math.floor(row / 8) * w.cols * 8 + (row % 8);
  if (w.dtype === 'bf16') {
    const h = halves(w);
    for (let k = 0; k < w.cols; k++) dst[dstOff + k] = bf16Value(h[base + k * 8]);
  } else for (let k = 0; k < w.cols; k++) dst[dstOff + k] = w.data[base + k * 8];
}

/** W[row, k] of the packed layout (int8: the stored integer, before its row's scale). */
export function packedAt(w: PackedMatrix, row: number, k: number): number {
  if (w.dtype === 'int8') return bytes(w.data)[Math.floor(row / 8) * (w.cols * 8 + 32) + k * 8 + (row % 8)];
  const i = Math.floor(row / 8) * w.cols * 8 + k * 8 + (row % 8);
  return w.dtype === 'bf16' ? bf16Value(halves(w)[i]) : w.data[i];
}
