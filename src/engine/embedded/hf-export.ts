// Writes a set of weights as a complete Hugging Face model folder: config.json, model.safetensors
// (float32, the engine's working precision), and the source folder's tokenizer files (tokenizer.json,
// tokenizer_config.json with its chat template, generation_config.json, special_tokens_map.json, …).
// tokenizer_config.json names the generic tokenizer class (see HF_TOKENIZER_CLASS), so transformers
// tokenizes exactly as the engine did while training.
// A LoRA version is merged into the weights (W + s·B·A), so the folder loads anywhere without PEFT.
// The folder is filled in a temporary sibling, fsynced, and swapped in by rename.
import { chmodSync, copyFileSync, existsSync, readFileSync, writeFileSync, openSync, fsyncSync, closeSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { ModelConfig } from './config.ts';
import type { ModelWeights } from './weights.ts';
import type { LoraAdapter, LoraTarget } from './lora.ts';
import { writeSafetensors, type TensorToWrite } from './safetensors.ts';
import { unpackRow, type PackedMatrix } from './kernels/packed.ts';
import { writeFolderAtomically } from './peft.ts';

/** Files copied from the source model folder when present (the tokenizer and generation settings). */
export const COPIED_MODEL_FILES = [
  'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'generation_config.json',
  'chat_template.jinja', 'tokenizer.model', 'vocab.json', 'merges.txt', 'added_tokens.json',
];

/**
 * The tokenizer class written into an exported tokenizer_config.json. The engine tokenizes with
 * tokenizer.json alone (normalizer, pre-tokenizer, model, post-processor). transformers 5 builds a
 * model-specific class (LlamaTokenizer, Qwen2Tokenizer, …) from the vocabulary with that class's own
 * pipeline and ignores tokenizer.json's normalizer and pre-tokenizer, which can differ: stories260K's
 * tokenizer.json trims and collapses spaces, LlamaTokenizer keeps them ("Hello " gains a '▁' token).
 * The generic class loads tokenizer.json as it is, so the exported
 * model sees the ids it was trained on (docs/gpu.md, scripts/peft-compat.py checks it).
 */
export const HF_TOKENIZER_CLASS = 'PreTrainedTokenizerFast';

/** The source's tokenizer_config.json (or {}) with the generic tokenizer class. */
export function exportedTokenizerConfig(sourceDir: string): Record<string, unknown> {
  const path = join(sourceDir, 'tokenizer_config.json');
  const config = existsSync(path) ? JSON.parse(readFileSync(path, 'utf8')) : {};
  return { ...config, tokenizer_class: HF_TOKENIZER_CLASS };
}

/** Rows [row0, row0 + rows) of a packed matrix, row-major. */
export function unpackRows(w: PackedMatrix, row0 = 0, rows = w.rows): Float32Array {
  const out = new Float32Array(rows * w.cols);
  for (let r = 0; r < rows; r++) unpackRow(w, row0 + r, out, r * w.cols);
  return out;
}

/** W[out, in] += s·B·A for one LoRA module. */
function addLoraDelta(w: Float32Array, a: Float32Array, b: Float32Array, out: number, inDim: number, rank: number, s: number): void {
  const row = new Float64Array(inDim);
  for (let o = 0; o < out; o++) {
    row.fill(0);
    for (let k = 0; k < rank; k++) {
      const coef = s * b[o * rank + k];
      if (coef === 0) continue;
      for (let i = 0; i < inDim; i++) row[i] += coef * a[k * inDim + i];
    }
    for (let i = 0; i < inDim; i++) w[o * inDim + i] += row[i];
  }
}

/** Every weight under its Hugging Face name, with `adapter` (if any) merged in. */
export function modelTensors(cfg: ModelConfig, w: ModelWeights, adapter: LoraAdapter | null): TensorToWrite[] {
  const H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim;
  const q = cfg.numHeads * hd, kv = cfg.numKvHeads * hd;
  const out: TensorToWrite[] = [];
  const add = (name: string, shape: number[], data: Float32Array) => out.push({ name, shape, data });
  add('model.embed_tokens.weight', [cfg.vocabSize, H], unpackRows(w.embed));
  w.layers.forEach((L, l) => {
    const p = `model.layers.${l}.`;
    const proj = (target: LoraTarget, m: PackedMatrix, row0: number, rows: number): Float32Array => {
      const data = unpackRows(m, row0, rows);
      const mod = adapter?.layers[l][target];
      if (mod) addLoraDelta(data, mod.a, mod.b, mod.out, mod.in, adapter!.config.rank, adapter!.scale);
      return data;
    };
    add(`${p}input_layernorm.weight`, [H], Float32Array.from(L.inputNorm));
    add(`${p}post_attention_layernorm.weight`, [H], Float32Array.from(L.postNorm));
    add(`${p}self_attn.q_proj.weight`, [q, H], proj('q_proj', L.wqkv, 0, q));
    add(`${p}self_attn.k_proj.weight`, [kv, H], proj('k_proj', L.wqkv, q, kv));
    add(`${p}self_attn.v_proj.weight`, [kv, H], proj('v_proj', L.wqkv, q + kv, kv));
    if (L.bqkv) {
      add(`${p}self_attn.q_proj.bias`, [q], L.bqkv.slice(0, q));
      add(`${p}self_attn.k_proj.bias`, [kv], L.bqkv.slice(q, q + kv));
      add(`${p}self_attn.v_proj.bias`, [kv], L.bqkv.slice(q + kv, q + 2 * kv));
    }
    if (L.qNorm && L.kNorm) {
      add(`${p}self_attn.q_norm.weight`, [hd], Float32Array.from(L.qNorm));
      add(`${p}self_attn.k_norm.weight`, [hd], Float32Array.from(L.kNorm));
    }
    add(`${p}self_attn.o_proj.weight`, [H, q], proj('o_proj', L.wo, 0, H));
    add(`${p}mlp.gate_proj.weight`, [I, H], proj('gate_proj', L.wgu, 0, I));
    add(`${p}mlp.up_proj.weight`, [I, H], proj('up_proj', L.wgu, I, I));
    add(`${p}mlp.down_proj.weight`, [H, I], proj('down_proj', L.wdown, 0, H));
  });
  add('model.norm.weight', [H], Float32Array.from(w.finalNorm));
  if (!cfg.tieWordEmbeddings) add('lm_head.weight', [cfg.vocabSize, H], unpackRows(w.lmHead));
  return out;
}

function fsyncPath(path: string, flags = 'r'): void {
  const fd = openSync(path, flags);
  try { fsyncSync(fd); } finally { closeSync(fd); }
}

/**
 * Fill the (empty, temporary) folder `tmp` with a Hugging Face model: `tensors`, and config.json and
 * tokenizer files taken from `sourceDir` (config.json's dtype set to float32, `configPatch` merged in;
 * tokenizer_config.json's class set to HF_TOKENIZER_CLASS, written even where the source has none).
 */
export function fillHfFolder(tmp: string, sourceDir: string, tensors: TensorToWrite[], meta: Record<string, string> = {}, configPatch: Record<string, unknown> = {}): void {
  const config = JSON.parse(readFileSync(join(sourceDir, 'config.json'), 'utf8'));
  writeFileSync(join(tmp, 'config.json'), JSON.stringify({ ...config, torch_dtype: 'float32', ...configPatch }, null, 2) + '\n');
  writeSafetensors(join(tmp, 'model.safetensors'), tensors, { format: 'pt', ...meta });
  writeFileSync(join(tmp, 'tokenizer_config.json'), JSON.stringify(exportedTokenizerConfig(sourceDir), null, 2) + '\n');
  for (const f of COPIED_MODEL_FILES) {
    if (f === 'tokenizer_config.json' || !existsSync(join(sourceDir, f))) continue;
    copyFileSync(join(sourceDir, f), join(tmp, f));
    chmodSync(join(tmp, f), 0o644); // the source may be read-only; the new folder is the user's
  }
}

/** fsync every file of a folder, then the folder (before it is renamed into place). */
export function syncFolder(dir: string): void {
  for (const f of readdirSync(dir)) fsyncPath(join(dir, f));
  fsyncPath(dir);
}

/** Write `tensors` as a Hugging Face folder at `dir` (see fillHfFolder), atomically. */
export function writeHfModel(dir: string, sourceDir: string, tensors: TensorToWrite[], meta: Record<string, string> = {}, configPatch: Record<string, unknown> = {}): void {
  writeFolderAtomically(dir, (tmp) => {
    fillHfFolder(tmp, sourceDir, tensors, meta, configPatch);
    syncFolder(tmp);
  });
}
