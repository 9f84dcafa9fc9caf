// A small GGUF writer (bench code): turns a model folder of ours (config.json + safetensors) into a
// GGUF file that llama.cpp loads, so the side-by-side benchmark runs both engines on identical
// weights. It writes the header (version 3), the metadata of the llama or qwen3 architecture, a
// synthetic SentencePiece-style vocabulary of the model's size (the benchmark feeds token ids, never
// text), and the matrices as F32, BF16 or Q8_0 (norm weights stay F32, as llama.cpp's converter does).
//
// Layout facts it relies on (GGUF v3, as llama.cpp's gguf.c reads it): little-endian; strings are a
// u64 length then bytes; a tensor's dims are listed innermost first (a [rows, cols] matrix is
// ne = [cols, rows]); tensor data starts at the first multiple of general.alignment (32) after the
// tensor infos, and each tensor's offset inside it is a multiple of 32 too. Q8_0 packs 32 weights as
// an f16 scale d = max|x|/127 and 32 int8 values round(x/d) (34 bytes). llama.cpp's llama
// architecture applies RoPE to adjacent pairs while Hugging Face checkpoints rotate halves, so its
// converter permutes the rows of q_proj and k_proj per head; this writer does the same (qwen3 uses
// the half-rotation and needs no permutation).
import { closeSync, openSync, writeSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type ModelConfig } from '../engine/embedded/config.ts';
import { listModelTensors, readTensorF32, type TensorInfo } from '../engine/embedded/safetensors.ts';
import { bf16Bits } from '../engine/embedded/kernels/packed.ts';

export type GgufMatrixType = 'F32' | 'BF16' | 'Q8_0';

/** ggml's type ids */
export const GGML_TYPE = { F32: 0, F16: 1, Q8_0: 8, BF16: 30 } as const;
const ALIGN = 32;

/** GGUF metadata value types */
const T = { U32: 4, I32: 5, F32: 6, BOOL: 7, STRING: 8, ARRAY: 9, U64: 10 } as const;

type MetaValue = { t: 'u32' | 'i32' | 'f32'; v: number } | { t: 'str'; v: string } | { t: 'bool'; v: boolean } | { t: 'strs'; v: string[] } | { t: 'f32s'; v: Float32Array } | { t: 'i32s'; v: Int32Array };

/** A growable little-endian byte buffer. */
class Bytes {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u32(x: number): void { this.room(4); this.buf.writeUInt32LE(x, this.length); this.length += 4; }
  i32(x: number): void { this.room(4); this.buf.writeInt32LE(x, this.length); this.length += 4; }
  u64(x: number): void { this.room(8); this.buf.writeBigUInt64LE(BigInt(x), this.length); this.length += 8; }
  f32(x: number): void { this.room(4); this.buf.writeFloatLE(x, this.length); this.length += 4; }
  u8(x: number): void { this.room(1); this.buf[this.length++] = x; }
  str(s: string): void { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.room(b.length); b.copy(this.buf, this.length); this.length += b.length; }
  pad(align: number): void { while (this.length % align) this.u8(0); }
  bytes(): Buffer { return this.buf.subarray(0, this.length); }
}

function writeMeta(out: Bytes, key: string, m: MetaValue): void {
  out.str(key);
  switch (m.t) {
    case 'u32': out.u32(T.U32); out.u32(m.v); break;
    case 'i32': out.u32(T.I32); out.i32(m.v); break;
    case 'f32': out.u32(T.F32); out.f32(m.v); break;
    case 'bool': out.u32(T.BOOL); out.u8(m.v ? 1 : 0); break;
    case 'str': out.u32(T.STRING); out.str(m.v); break;
    case 'strs': out.u32(T.ARRAY); out.u32(T.STRING); out.u64(m.v.length); for (const s of m.v) out.str(s); break;
    case 'f32s': out.u32(T.ARRAY); out.u32(T.F32); out.u64(m.v.length); for (const x of m.v) out.f32(x); break;
    case 'i32s': out.u32(T.ARRAY); out.u32(T.I32); out.u64(m.v.length); for (const x of m.v) out.i32(x); break;
  }
}

/** float32 → IEEE half, rounded to nearest even (what ggml's GGML_FP32_TO_FP16 does on x86). */
export function f16Bits(x: number): number {
  const h = new Float16Array([x]);
  return new Uint16Array(h.buffer)[0];
}

/** Q8_0 blocks of `x` (a multiple of 32 values), as llama.cpp's reference quantizer makes them: 34 bytes a block. */
export function quantizeQ8_0(x: Float32Array): Buffer {
  if (x.length % 32) throw new Error(`Q8_0 needs rows of a multiple of 32 values (got ${x.length})`);
  const out = Buffer.alloc((x.length / 32) * 34);
  for (let b = 0; b < x.length / 32; b++) {
    let amax = 0;
    for (let j = 0; j < 32; j++) amax = Math.max(amax, Math.abs(x[b * 32 + j]));
    const d = Math.fround(amax / 127), id = d ? Math.fround(1 / d) : 0;
    out.writeUInt16LE(f16Bits(d), b * 34);
    for (let j = 0; j < 32; j++) {
      const v = Math.fround(x[b * 32 + j] * id);
      out.writeInt8(Math.sign(v) * Math.round(Math.abs(v)), b * 34 + 2 + j); // roundf: half away from zero
    }
  }
  return out;
}

/** Bytes of a [rows × cols] matrix stored as `type`. */
export function tensorBytes(rows: number, cols: number, type: GgufMatrixType): number {
  return type === 'F32' ? rows * cols * 4 : type === 'BF16' ? rows * cols * 2 : rows * (cols / 32) * 34;
}

function encode(x: Float32Array, type: GgufMatrixType | 'F32'): Buffer {
  if (type === 'F32') return Buffer.from(x.buffer, x.byteOffset, x.byteLength);
  if (type === 'Q8_0') return quantizeQ8_0(x);
  const h = new Uint16Array(x.length);
  for (let i = 0; i < x.length; i++) h[i] = bf16Bits(x[i]);
  return Buffer.from(h.buffer);
}

/**
 * Rows of a q or k projection ([heads·hd, cols]) reordered as llama.cpp's converter does for the
 * llama architecture: within each head, row i·2 + j of the output is row j·hd/2 + i of the input.
 */
export function permuteRopeRows(w: Float32Array, heads: number, cols: number): Float32Array {
  const rows = w.length / cols, hd = rows / heads, out = new Float32Array(w.length);
  for (let h = 0; h < heads; h++) for (let i = 0; i < hd / 2; i++) for (let j = 0; j < 2; j++) {
    out.set(w.subarray((h * hd + j * (hd / 2) + i) * cols, (h * hd + j * (hd / 2) + i + 1) * cols), (h * hd + i * 2 + j) * cols);
  }
  return out;
}

/** The llama.cpp architecture of one of our model types, or why it cannot be written. */
function ggufArch(cfg: ModelConfig): 'llama' | 'qwen3' {
  if (cfg.modelType === 'llama' && !cfg.attentionBias && !cfg.qkNorm) return 'llama';
  if (cfg.modelType === 'qwen3') return 'qwen3';
  throw new Error(`the GGUF writer covers the llama and qwen3 layouts only (got ${cfg.modelType})`);
}

/** A synthetic SentencePiece vocabulary of n tokens: <unk>, <s>, </s>, the 256 byte tokens, then distinct pieces. */
function vocabulary(n: number): { tokens: string[]; scores: Float32Array; types: Int32Array } {
  const tokens: string[] = ['<unk>', '<s>', '</s>'], types = new Int32Array(n).fill(1);
  types[0] = 2; types[1] = 3; types[2] = 3;
  for (let b = 0; b < 256 && tokens.length < n; b++) { types[tokens.length] = 6; tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`); }
  while (tokens.length < n) tokens.push(`\u2581t${tokens.length}`);
  return { tokens, scores: Float32Array.from({ length: n }, (_, i) => -i), types };
}

/**
 * Write `dir` (config.json + safetensors) as the GGUF file `file`, its matrices as `type`. Returns
 * the bytes written. Tensors are read and written one at a time.
 */
export function writeGguf(dir: string, file: string, type: GgufMatrixType): number {
  const cfg = loadConfig(dir);
  const arch = ggufArch(cfg);
  const tensors = listModelTensors(dir);
  const H = cfg.hiddenSize, hd = cfg.headDim;
  if (type === 'Q8_0' && (H % 32 || cfg.intermediateSize % 32 || (cfg.numHeads * hd) % 32)) throw new Error('Q8_0 needs every matrix width to be a multiple of 32');

  // [gguf name, our tensor, is a matrix, rope permutation heads]
  const plan: { name: string; t: TensorInfo; matrix: boolean; permute?: number }[] = [];
  const add = (name: string, hf: string, matrix: boolean, permute?: number) => {
    const t = tensors.get(hf);
    if (!t) throw new Error(`missing tensor ${hf} in ${dir}`);
    plan.push({ name, t, matrix, permute });
  };
  add('token_embd.weight', 'model.embed_tokens.weight', true);
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}.`, b = `blk.${l}.`;
    add(`${b}attn_norm.weight`, `${p}input_layernorm.weight`, false);
    add(`${b}attn_q.weight`, `${p}self_attn.q_proj.weight`, true, arch === 'llama' ? cfg.numHeads : undefined);
    add(`${b}attn_k.weight`, `${p}self_attn.k_proj.weight`, true, arch === 'llama' ? cfg.numKvHeads : undefined);
    add(`${b}attn_v.weight`, `${p}self_attn.v_proj.weight`, true);
    add(`${b}attn_output.weight`, `${p}self_attn.o_proj.weight`, true);
    if (arch === 'qwen3') {
      add(`${b}attn_q_norm.weight`, `${p}self_attn.q_norm.weight`, false);
      add(`${b}attn_k_norm.weight`, `${p}self_attn.k_norm.weight`, false);
    }
    add(`${b}ffn_norm.weight`, `${p}post_attention_layernorm.weight`, false);
    add(`${b}ffn_gate.weight`, `${p}mlp.gate_proj.weight`, true);
    add(`${b}ffn_up.weight`, `${p}mlp.up_proj.weight`, true);
    add(`${b}ffn_down.weight`, `${p}mlp.down_proj.weight`, true);
  }
  add('output_norm.weight', 'model.norm.weight', false);
  if (!cfg.tieWordEmbeddings) add('output.weight', 'lm_head.weight', true);

  const head = new Bytes();
  const vocab = vocabulary(cfg.vocabSize);
  const meta: [string, MetaValue][] = [
    ['general.architecture', { t: 'str', v: arch }],
    ['general.name', { t: 'str', v: `openclaw-rl random ${arch} ${H}x${cfg.numLayers}` }],
    ['general.alignment', { t: 'u32', v: ALIGN }],
    ['general.file_type', { t: 'u32', v: type === 'F32' ? 0 : type === 'BF16' ? 32 : 7 }],
    [`${arch}.context_length`, { t: 'u32', v: Math.min(cfg.maxPositionEmbeddings, 8192) }],
    [`${arch}.embedding_length`, { t: 'u32', v: H }],
    [`${arch}.block_count`, { t: 'u32', v: cfg.numLayers }],
    [`${arch}.feed_forward_length`, { t: 'u32', v: cfg.intermediateSize }],
    [`${arch}.attention.head_count`, { t: 'u32', v: cfg.numHeads }],
    [`${arch}.attention.head_count_kv`, { t: 'u32', v: cfg.numKvHeads }],
    [`${arch}.attention.key_length`, { t: 'u32', v: hd }],
    [`${arch}.attention.value_length`, { t: 'u32', v: hd }],
    [`${arch}.rope.dimension_count`, { t: 'u32', v: hd }],
    [`${arch}.rope.freq_base`, { t: 'f32', v: cfg.ropeTheta }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { t: 'f32', v: cfg.rmsNormEps }],
    [`${arch}.vocab_size`, { t: 'u32', v: cfg.vocabSize }],
    ['tokenizer.ggml.model', { t: 'str', v: 'llama' }],
    ['tokenizer.ggml.tokens', { t: 'strs', v: vocab.tokens }],
    ['tokenizer.ggml.scores', { t: 'f32s', v: vocab.scores }],
    ['tokenizer.ggml.token_type', { t: 'i32s', v: vocab.types }],
    ['tokenizer.ggml.unknown_token_id', { t: 'u32', v: 0 }],
    ['tokenizer.ggml.bos_token_id', { t: 'u32', v: 1 }],
    ['tokenizer.ggml.eos_token_id', { t: 'u32', v: 2 }],
    ['tokenizer.ggml.add_bos_token', { t: 'bool', v: false }],
  ];
  head.u32(0x46554747); // "GGUF"
  head.u32(3);
  head.u64(plan.length);
  head.u64(meta.length);
  for (const [k, v] of meta) writeMeta(head, k, v);
  let offset = 0;
  const types: (GgufMatrixType | 'F32')[] = [];
  for (const p of plan) {
    const shape = p.t.shape, rows = shape.length === 2 ? shape[0] : 1, cols = shape[shape.length - 1];
    const ty = p.matrix ? type : 'F32';
    types.push(ty);
    head.str(p.name);
    head.u32(shape.length);
    for (let d = shape.length - 1; d >= 0; d--) head.u64(shape[d]);
    head.u32(GGML_TYPE[ty]);
    head.u64(offset);
    offset += tensorBytes(rows, cols, ty);
    offset = Math.ceil(offset / ALIGN) * ALIGN;
  }
  head.pad(ALIGN);
  const tmp = `${file}.partial`;
  const fd = openSync(tmp, 'w');
  let written = 0;
  const put = (b: Buffer) => { writeSync(fd, b); written += b.length; };
  try {
    put(head.bytes());
    const dataStart = written;
    plan.forEach((p, i) => {
      let x = readTensorF32(p.t);
      const cols = p.t.shape[p.t.shape.length - 1];
      if (p.permute) x = permuteRopeRows(x, p.permute, cols);
      put(encode(x, types[i]));
      const pad = (ALIGN - ((written - dataStart) % ALIGN)) % ALIGN;
      if (pad) put(Buffer.alloc(pad));
    });
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, file);
  return written;
}

/** Where the benchmark keeps the GGUF of a model folder: beside its safetensors. */
export function ggufPath(dir: string, type: GgufMatrixType): string {
  return join(dir, `model-${type.toLowerCase()}.gguf`);
}
