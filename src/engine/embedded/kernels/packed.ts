// Frozen weights packed for the forward GEMM: W [rows = out, cols = in] becomes panels of 8 rows,
// P[p][k][j] = W[8p + j][k], the last panel zero-padded. See assembly/kernels.ts (gemm_packed).

export interface PackedMatrix {
  /** ceil(rows / 8) · cols · 8 floats */
  data: Float32Array;
  rows: number;
  cols: number;
}

export function packedLength(rows: number, cols: number): number {
  return Math.ceil(rows / 8) * cols * 8;
}

/** Pack row-major `w` [rows × cols] into `out` (of packedLength floats, zeroed padding). */
export function packPanels(w: Float32Array, rows: number, cols: number, out: Float32Array): void {
  for (let r = 0; r < rows; r++) {
    const base = Math.floor(r / 8) * cols * 8 + (r % 8);
    for (let k = 0; k < cols; k++) out[base + k * 8] = w[r * cols + k];
  }
}

/** W[row, ·] out of the packed layout (embedding lookups from a tied LM head). */
export function unpackRow(w: PackedMatrix, row: number, dst: Float32Array, dstOff = 0): void {
  const base = Math.floor(row / 8) * w.cols * 8 + (row % 8);
  for (let k = 0; k < w.cols; k++) dst[dstOff + k] = w.data[base + k * 8];
}

/** W[row, k] of the packed layout. */
export function packedAt(w: PackedMatrix, row: number, k: number): number {
  return w.data[Math.floor(row / 8) * w.cols * 8 + k * 8 + (row % 8)];
}
