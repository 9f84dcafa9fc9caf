// Safetensors: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, __metadata__?}, then raw little-endian data.
// No maintained npm package reads it, and the format is small enough to own.
import { readFileSync, existsSync, openSync, readSync, closeSync, fstatSync, writeFileSync, renameSync } from 'node:fs';
import { join, basename } from 'node:path';

export type DType = 'F32' | 'F16' | 'BF16';
const DTYPE_BYTES: Record<DType, number> = { F32: 4, F16: 2, BF16: 2 };
const SUPPORTED = Object.keys(DTYPE_BYTES).join(', ');

export class ModelFileError extends Error {
  override name = 'ModelFileError';
}

export interface TensorInfo {
  name: string;
  dtype: DType;
  shape: number[];
  file: string;
  /** byte offset of the data inside the file */
  offset: number;
  byteLength: number;
}

/** Parse and validate one file's header; the data is not read. */
export function readHeader(file: string): { tensors: TensorInfo[]; metadata: Record<string, string> } {
  if (!existsSync(file)) throw new ModelFileError(`safetensors file not found: ${file}`);
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size < 8) throw new ModelFileError(`${basename(file)} is not a safetensors file (only ${size} bytes)`);
    const lenBuf = Buffer.alloc(8);
    readSync(fd, lenBuf, 0, 8, 0);
    const headerLen = lenBuf.readBigUInt64LE(0);
    if (headerLen > BigInt(Math.min(size - 8, 100_000_000))) {
      throw new ModelFileError(`${basename(file)}: corrupt safetensors header (declared header length ${headerLen} exceeds the file size ${size})`);
    }
    const n = Number(headerLen);
    const hdrBuf = Buffer.alloc(n);
    readSync(fd, hdrBuf, 0, n, 8);
    let header: Record<string, unknown>;
    try {
      header = JSON.parse(hdrBuf.toString('utf8'));
    } catch (e) {
      throw new ModelFileError(`${basename(file)}: corrupt safetensors header (not valid JSON: ${(e as Error).message})`);
    }
    if (typeof header !== 'object' || header === null || Array.isArray(header)) {
      throw new ModelFileError(`${basename(file)}: corrupt safetensors header (not a JSON object)`);
    }
    const dataStart = 8 + n;
    const tensors: TensorInfo[] = [];
    let metadata: Record<string, string> = {};
    for (const [name, raw] of Object.entries(header)) {
      if (name === '__metadata__') { metadata = raw as Record<string, string>; continue; }
      const t = raw as { dtype?: unknown; shape?: unknown; data_offsets?: unknown };
      if (typeof t !== 'object' || t === null || !Array.isArray(t.shape) || !Array.isArray(t.data_offsets) || t.data_offsets.length !== 2) {
        throw new ModelFileError(`${basename(file)}: corrupt entry for tensor '${name}' (needs dtype, shape and data_offsets)`);
      }
      if (typeof t.dtype !== 'string' || !(t.dtype in DTYPE_BYTES)) {
        throw new ModelFileError(`${basename(file)}: tensor '${name}' has unsupported dtype ${String(t.dtype)} (supported: ${SUPPORTED})`);
      }
      const dtype = t.dtype as DType;
      const shape = t.shape as number[];
      if (!shape.every((d) => Number.isInteger(d) && d >= 0)) throw new ModelFileError(`${basename(file)}: tensor '${name}' has an invalid shape ${JSON.stringify(shape)}`);
      const [b, e] = t.data_offsets as number[];
      const expected = shape.reduce((a, d) => a * d, 1) * DTYPE_BYTES[dtype];
      if (!Number.isInteger(b) || !Number.isInteger(e) || e - b !== expected) {
        throw new ModelFileError(`${basename(file)}: tensor '${name}' data_offsets [${b}, ${e}] do not match shape ${JSON.stringify(shape)} × ${dtype} (${expected} bytes)`);
      }
      if (dataStart + e > size) throw new ModelFileError(`${basename(file)}: tensor '${name}' runs past the end of the file (truncated download?)`);
      tensors.push({ name, dtype, shape, file, offset: dataStart + b, byteLength: expected });
    }
    return { tensors, metadata };
  } finally {
    closeSync(fd);
  }
}

/** All tensors of a model folder: `model.safetensors`, or the shards named by `model.safetensors.index.json`. */
export function listModelTensors(dir: string): Map<string, TensorInfo> {
  const single = join(dir, 'model.safetensors');
  const index = join(dir, 'model.safetensors.index.json');
  let files: string[];
  if (existsSync(single)) files = [single];
  else if (existsSync(index)) {
    let idx: { weight_map?: Record<string, string> };
    try { idx = JSON.parse(readFileSync(index, 'utf8')); } catch (e) {
      throw new ModelFileError(`model.safetensors.index.json is not valid JSON: ${(e as Error).message}`);
    }
    if (!idx.weight_map) throw new ModelFileError('model.safetensors.index.json has no weight_map');
    files = [...new Set(Object.values(idx.weight_map))].map((f) => join(dir, f));
  } else {
    throw new ModelFileError(`no weights in ${dir}: expected model.safetensors or model.safetensors.index.json with its shards`);
  }
  const out = new Map<string, TensorInfo>();
  for (const f of files) for (const t of readHeader(f).tensors) out.set(t.name, t);
  return out;
}

/** The tensors of one safetensors file by name. */
export function listModelTensorsIn(file: string): Map<string, TensorInfo> {
  return new Map(readHeader(file).tensors.map((t) => [t.name, t]));
}

/** Read a tensor and widen it to float32 into `dst` (or a new array). */
export function readTensorF32(t: TensorInfo, dst?: Float32Array): Float32Array {
  const count = t.shape.reduce((a, d) => a * d, 1);
  const out = dst ?? new Float32Array(count);
  if (out.length !== count) throw new ModelFileError(`tensor '${t.name}': destination holds ${out.length} values, tensor has ${count}`);
  return readValuesF32(t, 0, out);
}

/** Rows [row0, row0 + rows) of a tensor (along its first dimension), widened to float32 into `dst` (exactly that many values). */
export function readTensorRowsF32(t: TensorInfo, row0: number, rows: number, dst: Float32Array): Float32Array {
  const perRow = t.shape.slice(1).reduce((a, d) => a * d, 1);
  if (row0 < 0 || rows < 0 || row0 + rows > (t.shape[0] ?? 1)) throw new ModelFileError(`tensor '${t.name}': rows ${row0}..${row0 + rows} are outside its shape ${JSON.stringify(t.shape)}`);
  if (dst.length !== rows * perRow) throw new ModelFileError(`tensor '${t.name}': destination holds ${dst.length} values, ${rows} rows have ${rows * perRow}`);
  return readValuesF32(t, row0 * perRow, dst);
}

/** dst.length values of `t` from value `first` on, as float32. */
function readValuesF32(t: TensorInfo, first: number, out: Float32Array): Float32Array {
  const count = out.length, width = DTYPE_BYTES[t.dtype], position = t.offset + first * width;
  const fd = openSync(t.file, 'r');
  try {
    if (t.dtype === 'F32') {
      // read straight into the destination's bytes (little-endian host assumed, as on x86/arm)
      readFully(fd, new Uint8Array(out.buffer, out.byteOffset, count * 4), position);
    } else {
      const raw = new Uint8Array(count * width);
      readFully(fd, raw, position);
      const u16 = new Uint16Array(raw.buffer, 0, count);
      if (t.dtype === 'BF16') {
        const u32 = new Uint32Array(out.buffer, out.byteOffset, count);
        for (let i = 0; i < count; i++) u32[i] = u16[i] << 16;
      } else {
        for (let i = 0; i < count; i++) out[i] = f16ToF32(u16[i]);
      }
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

function readFully(fd: number, into: Uint8Array, position: number): void {
  let done = 0;
  while (done < into.length) {
    const n = readSync(fd, into, done, Math.min(into.length - done, 1 << 30), position + done);
    if (n <= 0) throw new ModelFileError('unexpected end of file while reading tensor data');
    done += n;
  }
}

export function f16ToF32(h: number): number {
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

/** Round-to-nearest-even float32 → bfloat16 bits. */
export function f32ToBf16(x: number): number {
  const u = new Uint32Array(new Float32Array([x]).buffer)[0];
  if ((u & 0x7fffffff) > 0x7f800000) return 0x7fc0; // NaN
  return ((u + 0x7fff + ((u >> 16) & 1)) >>> 16) & 0xffff;
}

export interface TensorToWrite { name: string; shape: number[]; data: Float32Array; dtype?: DType }

/** Write tensors to a safetensors file atomically (temp file + rename). */
export function writeSafetensors(file: string, tensors: TensorToWrite[], metadata: Record<string, string> = {}): void {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  const parts: Uint8Array[] = [];
  for (const t of [...tensors].sort((a, b) => (a.name < b.name ? -1 : 1))) {
    const dtype = t.dtype ?? 'F32';
    const count = t.shape.reduce((a, d) => a * d, 1);
    if (count !== t.data.length) throw new ModelFileError(`tensor '${t.name}': shape ${JSON.stringify(t.shape)} needs ${count} values, got ${t.data.length}`);
    let bytes: Uint8Array;
    if (dtype === 'F32') bytes = new Uint8Array(t.data.buffer.slice(t.data.byteOffset, t.data.byteOffset + t.data.byteLength) as ArrayBuffer);
    else {
      const u16 = new Uint16Array(count);
      for (let i = 0; i < count; i++) u16[i] = dtype === 'BF16' ? f32ToBf16(t.data[i]) : f32ToF16(t.data[i]);
      bytes = new Uint8Array(u16.buffer);
    }
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes.length] };
    parts.push(bytes);
    offset += bytes.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - ((json.length + 8) % 8)) % 8); // keep data 8-byte aligned
  const head = Buffer.alloc(8);
  head.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, Buffer.concat([head, Buffer.from(json), ...parts]));
  renameSync(tmp, file);
}

function f32ToF16(x: number): number {
  // simple round-to-nearest conversion, used only for writing test fixtures
  const f = new Float32Array([x]);
  const u = new Uint32Array(f.buffer)[0];
  const sign = (u >>> 16) & 0x8000;
  let e = ((u >>> 23) & 0xff) - 127 + 15;
  const m = u & 0x7fffff;
  if (((u >>> 23) & 0xff) === 0xff) return sign | 0x7c00 | (m ? 0x200 : 0);
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const mm = (m | 0x800000) >> (1 - e);
    return sign | ((mm + 0x1000) >> 13);
  }
  const r = sign | (e << 10) | (m >> 13);
  return r + ((m >> 12) & 1);
}
