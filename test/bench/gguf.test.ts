// The benchmark's GGUF writer (src/bench/gguf.ts): Q8_0 blocks as llama.cpp's reference quantizer
// makes them, the q/k row permutation of llama.cpp's converter, and a written file whose header,
// tensor table and data offsets read back as GGUF v3 lays them out.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { quantizeQ8_0, permuteRopeRows, f16Bits, writeGguf, GGML_TYPE, tensorBytes } from '../../src/bench/gguf.ts';
import { writeRandomModel, tinyConfig } from '../../src/bench/shapes.ts';
import { tempDir } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);

test('f16Bits: IEEE half bits, rounded to nearest even', () => {
  const cases: [number, number][] = [[0, 0x0000], [1, 0x3c00], [-2, 0xc000], [65504, 0x7bff], [1 / 127, 0x2008], [2 ** -24, 0x0001], [1 + 2 ** -11, 0x3c00], [1 + 3 * 2 ** -11, 0x3c02]];
  for (const [x, bits] of cases) assert.equal(f16Bits(x), bits, `f16(${x})`);
});

test('Q8_0: one f16 scale max|x|/127 and 32 values round(x·127/max) per block, 34 bytes', () => {
  const x = new Float32Array(64);
  for (let i = 0; i < 32; i++) x[i] = (i - 16) / 16; // max |x| = 1 → d = 1/127
  x[32 + 5] = -3; // second block: one value, the rest 0
  const b = quantizeQ8_0(x);
  assert.equal(b.length, 68);
  assert.equal(b.readUInt16LE(0), f16Bits(1 / 127));
  const q = Array.from({ length: 32 }, (_, j) => b.readInt8(2 + j));
  assert.deepEqual(q, Array.from({ length: 32 }, (_, i) => { const v = Math.fround(x[i] * Math.fround(1 / Math.fround(1 / 127))); return Math.sign(v) * Math.round(Math.abs(v)); }));
  assert.equal(q[0], -127); assert.equal(q[16], 0); assert.equal(q[24], 64); // 0.5·127 = 63.5 → 64 (half away from zero)
  assert.equal(b.readUInt16LE(34), f16Bits(3 / 127));
  assert.equal(b.readInt8(36 + 5), -127);
  assert.throws(() => quantizeQ8_0(new Float32Array(31)), /multiple of 32/);
});

test('permuteRopeRows: within each head, row 2i + j comes from row j·hd/2 + i', () => {
  // 2 heads of head_dim 4, one column: rows 0..7
  const w = Float32Array.from({ length: 8 }, (_, i) => i);
  assert.deepEqual(Array.from(permuteRopeRows(w, 2, 1)), [0, 2, 1, 3, 4, 6, 5, 7]);
});

/** the GGUF reader this test needs: header, metadata keys, tensor infos */
function readGguf(file: string) {
  const b = readFileSync(file);
  let o = 0;
  const u32 = () => { const v = b.readUInt32LE(o); o += 4; return v; };
  const u64 = () => { const v = Number(b.readBigUInt64LE(o)); o += 8; return v; };
  const str = () => { const n = u64(); const s = b.toString('utf8', o, o + n); o += n; return s; };
  const skip = (t: number): unknown => {
    if (t === 8) return str();
    if (t === 9) { const it = u32(), n = u64(); const out = []; for (let i = 0; i < n; i++) out.push(skip(it)); return out; }
    const size = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8 }[t] ?? 0;
    const v = t === 4 ? b.readUInt32LE(o) : t === 6 ? b.readFloatLE(o) : t === 5 ? b.readInt32LE(o) : t === 7 ? b[o] : undefined;
    o += size;
    return v;
  };
  assert.equal(b.toString('latin1', 0, 4), 'GGUF'); o = 4;
  const version = u32(), nTensors = u64(), nMeta = u64();
  const meta = new Map<string, unknown>();
  for (let i = 0; i < nMeta; i++) { const k = str(); meta.set(k, skip(u32())); }
  const tensors = [];
  for (let i = 0; i < nTensors; i++) {
    const name = str(), nd = u32(), dims = Array.from({ length: nd }, u64), type = u32(), offset = u64();
    tensors.push({ name, dims, type, offset });
  }
  return { version, meta, tensors, dataStart: Math.ceil(o / 32) * 32, size: b.length };
}

for (const [arch, type] of [['llama', 'Q8_0'], ['qwen3', 'BF16'], ['llama', 'F32']] as const) {
  test(`writeGguf (${arch}, ${type}): header, metadata, tensor table and aligned offsets as GGUF v3 reads them`, () => {
    const dir = join(tmp.dir, `${arch}-${type}`);
    writeRandomModel(dir, tinyConfig(arch, { head_dim: 16, intermediate_size: 64 }), { seed: 2 }); // Q8_0 needs widths of multiples of 32
    const file = join(dir, 'm.gguf');
    const written = writeGguf(dir, file, type);
    const g = readGguf(file);
    assert.equal(g.version, 3);
    assert.equal(g.meta.get('general.architecture'), arch);
    assert.equal(g.meta.get(`${arch}.embedding_length`), 32);
    assert.equal(g.meta.get(`${arch}.attention.head_count_kv`), 2);
    assert.equal((g.meta.get('tokenizer.ggml.tokens') as string[]).length, 512);
    // 2 layers × (2 norms + 7 matrices (+ 2 q/k norms for qwen3)) + embeddings + final norm, embeddings tied
    assert.equal(g.tensors.length, 2 + 2 * (arch === 'qwen3' ? 11 : 9));
    const q = g.tensors.find((t) => t.name === 'blk.1.attn_q.weight');
    assert.deepEqual(q?.dims, [32, 64]); // innermost first: [in = hidden, out = heads·head_dim]
    assert.equal(q?.type, GGML_TYPE[type]);
    assert.equal(g.tensors.find((t) => t.name === 'output_norm.weight')?.type, GGML_TYPE.F32);
    let end = 0;
    for (const t of g.tensors) {
      assert.equal(t.offset % 32, 0, `${t.name} offset`);
      assert.ok(t.offset >= end, `${t.name} overlaps the tensor before it`);
      end = t.offset + tensorBytes(t.dims[1] ?? 1, t.dims[0], t.type === GGML_TYPE.F32 ? 'F32' : type);
    }
    assert.equal(g.size, written);
    assert.equal(written, g.dataStart + Math.ceil(end / 32) * 32);
  });
}
