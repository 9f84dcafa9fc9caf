// Random-weight models of real shapes, built in memory (benchmarks) or written as a Hugging Face
// folder (tests of the loading path). Weights are uniform with the std of HF's initialiser (0.02);
// norm weights are 1, so activations keep realistic scales.
import { mkdirSync, writeFileSync, copyFileSync, openSync, writeSync, closeSync, renameSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { homedir } from 'node:os';
import { parseConfig, type ModelConfig } from '../engine/embedded/config.ts';
import { Arena } from '../engine/embedded/arena.ts';
import type { ModelWeights, LayerWeights } from '../engine/embedded/weights.ts';
import { writeSafetensors, type DType, type TensorToWrite } from '../engine/embedded/safetensors.ts';
import { Rng } from '../engine/embedded/rng.ts';
import { packedSlots, packPanels, bf16Bits, type PackedMatrix, type WeightsDtype } from '../engine/embedded/kernels/packed.ts';
import { allocMatrix, choosePlacement, type PlacementChoice } from '../engine/embedded/weight-memory.ts';

/** config.json contents of the shapes the benchmarks use */
export const SHAPES: Record<string, Record<string, unknown>> = {
  // stories260K (the test model, and the chat model built from it) with random weights
  '260k': { model_type: 'llama', hidden_size: 64, intermediate_size: 172, num_hidden_layers: 5, num_attention_heads: 8, num_key_value_heads: 4, head_dim: 8, vocab_size: 512, max_position_embeddings: 512, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true },
  // llama2.c's stories15M layout with a GQA twist, as in engines.md
  '15m': { model_type: 'llama', hidden_size: 288, intermediate_size: 768, num_hidden_layers: 6, num_attention_heads: 6, num_key_value_heads: 2, vocab_size: 32000, max_position_embeddings: 1024, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: false },
  // SmolLM2-135M
  '135m': { model_type: 'llama', hidden_size: 576, intermediate_size: 1536, num_hidden_layers: 30, num_attention_heads: 9, num_key_value_heads: 3, vocab_size: 49152, max_position_embeddings: 8192, rms_norm_eps: 1e-5, rope_theta: 100000, tie_word_embeddings: true },
  // Qwen3-0.6B
  '0.6b': { model_type: 'qwen3', hidden_size: 1024, intermediate_size: 3072, num_hidden_layers: 28, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, max_position_embeddings: 40960, rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true },
  // Qwen3-1.7B (1.72B parameters, embeddings tied: 3.4 GB of matrices in bf16, 6.9 GB in float32)
  '1.7b': { model_type: 'qwen3', hidden_size: 2048, intermediate_size: 6144, num_hidden_layers: 28, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, max_position_embeddings: 40960, rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true },
  // Qwen3-4B (4.02B parameters: 8.0 GB in bf16)
  '4b': { model_type: 'qwen3', hidden_size: 2560, intermediate_size: 9728, num_hidden_layers: 36, num_attention_heads: 32, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, max_position_embeddings: 40960, rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true },
};

/** Tiny shapes of each architecture for tests (vocab 512 so stories260K's tokenizer fits). */
export function tinyConfig(modelType: 'llama' | 'mistral' | 'qwen2' | 'qwen3', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    model_type: modelType, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
    vocab_size: 512, max_position_embeddings: 128, rms_norm_eps: 1e-6, rope_theta: 10000, tie_word_embeddings: modelType !== 'qwen2',
    bos_token_id: 1, eos_token_id: 2, ...extra,
  };
}

function fillRandom(a: Float32Array, rng: Rng, std: number): void {
  const r = std * Math.sqrt(3);
  for (let i = 0; i < a.length; i++) a[i] = (rng.next() * 2 - 1) * r;
}

/** The tensors of a random model under their Hugging Face names. */
export function randomTensors(raw: Record<string, unknown>, seed = 1): TensorToWrite[] {
  const cfg = parseConfig(raw);
  const rng = new Rng(seed);
  const H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim, q = cfg.numHeads * hd, kv = cfg.numKvHeads * hd;
  const out: TensorToWrite[] = [];
  const add = (name: string, shape: number[], std: number | 'ones') => {
    const data = new Float32Array(shape.reduce((a, d) => a * d, 1));
    if (std === 'ones') data.fill(1); else fillRandom(data, rng, std);
    out.push({ name, shape, data });
  };
  add('model.embed_tokens.weight', [cfg.vocabSize, H], 0.02);
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}.`;
    add(`${p}input_layernorm.weight`, [H], 'ones');
    add(`${p}post_attention_layernorm.weight`, [H], 'ones');
    add(`${p}self_attn.q_proj.weight`, [q, H], 0.02);
    add(`${p}self_attn.k_proj.weight`, [kv, H], 0.02);
    add(`${p}self_attn.v_proj.weight`, [kv, H], 0.02);
    add(`${p}self_attn.o_proj.weight`, [H, q], 0.02);
    if (cfg.attentionBias) {
      add(`${p}self_attn.q_proj.bias`, [q], 0.02); add(`${p}self_attn.k_proj.bias`, [kv], 0.02); add(`${p}self_attn.v_proj.bias`, [kv], 0.02);
    }
    if (cfg.qkNorm) { add(`${p}self_attn.q_norm.weight`, [hd], 'ones'); add(`${p}self_attn.k_norm.weight`, [hd], 'ones'); }
    add(`${p}mlp.gate_proj.weight`, [I, H], 0.02);
    add(`${p}mlp.up_proj.weight`, [I, H], 0.02);
    add(`${p}mlp.down_proj.weight`, [H, I], 0.02);
  }
  add('model.norm.weight', [H], 'ones');
  if (!cfg.tieWordEmbeddings) add('lm_head.weight', [cfg.vocabSize, H], 0.02);
  return out;
}

/**
 * Write a random model as a Hugging Face folder. `scale` multiplies the weights' std (tests use
 * larger weights so logits are far from uniform); `tokenizerFrom` copies tokenizer files.
 */
export function writeRandomModel(dir: string, raw: Record<string, unknown>, opts: { seed?: number; dtype?: DType; scale?: number; tokenizerFrom?: string; shards?: number } = {}): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.json'), JSON.stringify(raw, null, 2));
  const tensors = randomTensors(raw, opts.seed ?? 1).map((t) => {
    if (opts.scale && !t.name.endsWith('norm.weight')) for (let i = 0; i < t.data.length; i++) t.data[i] *= opts.scale;
    return { ...t, dtype: opts.dtype ?? 'F32' };
  });
  const shards = opts.shards ?? 1;
  if (shards === 1) writeSafetensors(join(dir, 'model.safetensors'), tensors);
  else {
    const weightMap: Record<string, string> = {};
    for (let s = 0; s < shards; s++) {
      const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(shards).padStart(5, '0')}.safetensors`;
      const part = tensors.filter((_, i) => i % shards === s);
      for (const t of part) weightMap[t.name] = file;
      writeSafetensors(join(dir, file), part);
    }
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  }
  if (opts.tokenizerFrom) for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(opts.tokenizerFrom, f), join(dir, f));
}

/** A random model straight into memory (no files): for benchmarks of large shapes. Matrices go where weight-memory.ts puts them. */
export function randomModelInMemory(raw: Record<string, unknown>, seed = 1, dtype: WeightsDtype = 'f32', placementChoice?: PlacementChoice): { cfg: ModelConfig; weights: ModelWeights; arena: Arena } {
  const cfg = parseConfig(raw);
  const arena = new Arena();
  const placement = choosePlacement(cfg, dtype, placementChoice);
  const rng = new Rng(seed);
  const H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim, q = cfg.numHeads * hd, kv = cfg.numKvHeads * hd;
  let bytes = 0;
  const rand = (n: number, std = 0.02) => { const a = arena.alloc(n); fillRandom(a, rng, std); bytes += a.byteLength; return a; };
  /** random weights straight into the packed layout (padding rows stay zero) */
  const randPacked = (rows: number, cols: number): PackedMatrix => {
    const data = allocMatrix(packedSlots(rows, cols, dtype), placement, arena);
    bytes += data.byteLength;
    const r = 0.02 * Math.sqrt(3), line = new Float32Array(cols);
    for (let row = 0; row < rows; row++) {
      for (let k = 0; k < cols; k++) line[k] = (rng.next() * 2 - 1) * r;
      packPanels(line, 1, cols, data, dtype, row);
    }
    return dtype === 'f32' ? { data, rows, cols } : { data, rows, cols, dtype };
  };
  const ones = (n: number) => { const a = arena.alloc(n); a.fill(1); bytes += a.byteLength; return a; };
  const embed = randPacked(cfg.vocabSize, H);
  const layers: LayerWeights[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    layers.push({
      inputNorm: ones(H), postNorm: ones(H), wqkv: randPacked(q + 2 * kv, H), bqkv: cfg.attentionBias ? rand(q + 2 * kv) : null,
      qNorm: cfg.qkNorm ? ones(hd) : null, kNorm: cfg.qkNorm ? ones(hd) : null, wo: randPacked(H, q), wgu: randPacked(2 * I, H), wdown: randPacked(H, I),
    });
  }
  const finalNorm = ones(H);
  const lmHead = cfg.tieWordEmbeddings ? embed : randPacked(cfg.vocabSize, H);
  return { cfg, arena, weights: { embed, layers, finalNorm, lmHead, sourceDtypes: ['F32'], bytes, dtype, placement } };
}

/**
 * Write a random model of `raw`'s shape as one safetensors file of `dtype` (F32 or BF16), one tensor
 * at a time (a multi-GB model never sits in memory), with a cheap xorshift fill: uniform weights of
 * std 0.02, norms 1. `tokenizerFrom` copies tokenizer.json and tokenizer_config.json.
 */
export function writeRandomShape(dir: string, raw: Record<string, unknown>, tokenizerFrom: string, dtype: 'F32' | 'BF16' = 'F32'): void {
  const cfg = parseConfig(raw);
  const H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim, q = cfg.numHeads * hd, kv = cfg.numKvHeads * hd;
  const specs: { name: string; shape: number[]; ones: boolean }[] = [{ name: 'model.embed_tokens.weight', shape: [cfg.vocabSize, H], ones: false }];
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}.`;
    specs.push({ name: `${p}input_layernorm.weight`, shape: [H], ones: true }, { name: `${p}post_attention_layernorm.weight`, shape: [H], ones: true });
    specs.push({ name: `${p}self_attn.q_proj.weight`, shape: [q, H], ones: false }, { name: `${p}self_attn.k_proj.weight`, shape: [kv, H], ones: false });
    specs.push({ name: `${p}self_attn.v_proj.weight`, shape: [kv, H], ones: false }, { name: `${p}self_attn.o_proj.weight`, shape: [H, q], ones: false });
    if (cfg.attentionBias) for (const [n, d] of [['q', q], ['k', kv], ['v', kv]] as const) specs.push({ name: `${p}self_attn.${n}_proj.bias`, shape: [d], ones: false });
    if (cfg.qkNorm) specs.push({ name: `${p}self_attn.q_norm.weight`, shape: [hd], ones: true }, { name: `${p}self_attn.k_norm.weight`, shape: [hd], ones: true });
    specs.push({ name: `${p}mlp.gate_proj.weight`, shape: [I, H], ones: false }, { name: `${p}mlp.up_proj.weight`, shape: [I, H], ones: false });
    specs.push({ name: `${p}mlp.down_proj.weight`, shape: [H, I], ones: false });
  }
  specs.push({ name: 'model.norm.weight', shape: [H], ones: true });
  if (!cfg.tieWordEmbeddings) specs.push({ name: 'lm_head.weight', shape: [cfg.vocabSize, H], ones: false });
  const width = dtype === 'BF16' ? 2 : 4;
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of specs) {
    const bytes = t.shape.reduce((a, d) => a * d, width);
    header[t.name] = { dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  mkdirSync(dir, { recursive: true });
  const tmp = join(dir, 'model.safetensors.partial');
  const fd = openSync(tmp, 'w');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  writeSync(fd, len); writeSync(fd, Buffer.from(json));
  const r = 0.02 * Math.sqrt(3);
  let x = 0x9e3779b9;
  const block = new Float32Array(1 << 20), halves = new Uint16Array(block.length);
  for (const t of specs) {
    let left = t.shape.reduce((a, d) => a * d, 1);
    while (left > 0) {
      const n = Math.min(left, block.length);
      if (t.ones) block.fill(1, 0, n);
      else for (let i = 0; i < n; i++) { x ^= x << 13; x ^= x >>> 17; x ^= x << 5; block[i] = ((x >>> 0) / 4294967296 * 2 - 1) * r; }
      if (dtype === 'BF16') {
        for (let i = 0; i < n; i++) halves[i] = bf16Bits(block[i]);
        writeSync(fd, new Uint8Array(halves.buffer, 0, n * 2));
      } else writeSync(fd, new Uint8Array(block.buffer, 0, n * 4));
      left -= n;
    }
  }
  closeSync(fd);
  writeFileSync(join(dir, 'config.json'), JSON.stringify(raw, null, 2));
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(tokenizerFrom, f), join(dir, f));
  renameSync(tmp, join(dir, 'model.safetensors'));
}

/** A random model of `shape` with the Qwen3 tokenizer files (safetensors of `dtype`), written once and reused. */
export function shapeModelDir(shape: string, tokenizerDir: string, cacheDir = join(homedir(), '.cache', 'openclaw-rl', 'shapes'), dtype: 'F32' | 'BF16' = 'F32'): string {
  const raw = SHAPES[shape];
  if (!raw) throw new Error(`unknown shape '${shape}' (available: ${Object.keys(SHAPES).join(', ')})`);
  const dir = join(cacheDir, `${shape}-random-${dtype.toLowerCase()}`);
  if (!existsSync(join(dir, 'model.safetensors'))) writeRandomShape(dir, raw, tokenizerDir, dtype);
  return dir;
}
