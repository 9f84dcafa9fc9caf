// Model configuration: the subset of Hugging Face `config.json` the embedded engine understands,
// validated up front so a bad folder fails with one clear message instead of wrong numbers later.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { ModelFileError } from './safetensors.ts';

export const SUPPORTED_MODEL_TYPES = ['llama', 'mistral', 'qwen2', 'qwen3'] as const;
export type ModelType = (typeof SUPPORTED_MODEL_TYPES)[number];
export const SUPPORTED_ROPE_SCALING = ['default', 'linear', 'llama3', 'yarn'] as const;

export interface RopeScaling {
  type: (typeof SUPPORTED_ROPE_SCALING)[number];
  factor: number;
  lowFreqFactor?: number;
  highFreqFactor?: number;
  originalMaxPositionEmbeddings?: number;
  betaFast?: number;
  betaSlow?: number;
  attentionFactor?: number;
}

export interface ModelConfig {
  modelType: ModelType;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  maxPositionEmbeddings: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling | null;
  tieWordEmbeddings: boolean;
  /** q/k/v projections carry biases (qwen2, or `attention_bias: true`) */
  attentionBias: boolean;
  /** per-head RMSNorm on q and k before RoPE (qwen3) */
  qkNorm: boolean;
  /** attend only to the last `slidingWindow` positions (mistral), null = full causal */
  slidingWindow: number | null;
  bosTokenId: number | null;
  eosTokenIds: number[];
}

export function loadConfig(dir: string): ModelConfig {
  const path = join(dir, 'config.json');
  if (!existsSync(dir)) throw new ModelFileError(`model folder not found: ${dir}`);
  if (!existsSync(path)) throw new ModelFileError(`config.json not found in ${dir} (expected a Hugging Face model folder)`);
  let raw: Record<string, unknown>;
  try { raw = JSON.parse(readFileSync(path, 'utf8')); } catch (e) {
    throw new ModelFileError(`config.json in ${dir} is not valid JSON: ${(e as Error).message}`);
  }
  const cfg = parseConfig(raw);
  // generation_config.json may list extra end-of-sequence ids (stories260K ends stories with BOS)
  const genPath = join(dir, 'generation_config.json');
  if (existsSync(genPath)) {
    try {
      const gen = JSON.parse(readFileSync(genPath, 'utf8'));
      for (const id of toIdList(gen.eos_token_id)) if (!cfg.eosTokenIds.includes(id)) cfg.eosTokenIds.push(id);
    } catch { /* a broken generation_config only loses the extra stop ids */ }
  }
  return cfg;
}

function toIdList(v: unknown): number[] {
  if (typeof v === 'number') return [v];
  if (Array.isArray(v)) return v.filter((x): x is number => typeof x === 'number');
  return [];
}

export function parseConfig(raw: Record<string, unknown>): ModelConfig {
  const modelType = raw.model_type;
  if (typeof modelType !== 'string' || !(SUPPORTED_MODEL_TYPES as readonly string[]).includes(modelType)) {
    throw new ModelFileError(`unsupported model_type ${JSON.stringify(modelType)}: the embedded engine supports ${SUPPORTED_MODEL_TYPES.join(', ')}`);
  }
  const num = (key: string, fallback?: number): number => {
    const v = raw[key] ?? fallback;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new ModelFileError(`config.json: '${key}' must be a number (got ${JSON.stringify(raw[key])})`);
    return v;
  };
  const act = raw.hidden_act ?? 'silu';
  if (act !== 'silu' && act !== 'swish') throw new ModelFileError(`config.json: hidden_act '${String(act)}' is not supported (only silu/SwiGLU)`);
  if (raw.mlp_bias === true) throw new ModelFileError('config.json: mlp_bias true is not supported');
  const hiddenSize = num('hidden_size');
  const numHeads = num('num_attention_heads');
  const numKvHeads = num('num_key_value_heads', numHeads);
  if (numHeads % numKvHeads !== 0) throw new ModelFileError(`config.json: num_attention_heads ${numHeads} is not a multiple of num_key_value_heads ${numKvHeads}`);
  const headDim = typeof raw.head_dim === 'number' ? raw.head_dim : hiddenSize / numHeads;
  if (!Number.isInteger(headDim) || headDim % 2 !== 0) throw new ModelFileError(`config.json: head_dim ${headDim} must be an even integer`);
  const sliding = modelType === 'mistral' || raw.use_sliding_window === true ? raw.sliding_window : null;
  return {
    modelType: modelType as ModelType,
    hiddenSize,
    intermediateSize: num('intermediate_size'),
    numLayers: num('num_hidden_layers'),
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: num('vocab_size'),
    maxPositionEmbeddings: num('max_position_embeddings', 2048),
    rmsNormEps: num('rms_norm_eps', 1e-6),
    ropeTheta: num('rope_theta', 10000),
    ropeScaling: parseRopeScaling(raw.rope_scaling ?? null, num('max_position_embeddings', 2048)),
    tieWordEmbeddings: raw.tie_word_embeddings === true,
    attentionBias: modelType === 'qwen2' || raw.attention_bias === true,
    qkNorm: modelType === 'qwen3',
    slidingWindow: typeof sliding === 'number' ? sliding : null,
    bosTokenId: typeof raw.bos_token_id === 'number' ? raw.bos_token_id : null,
    eosTokenIds: toIdList(raw.eos_token_id),
  };
}

function parseRopeScaling(rs: unknown, maxPos: number): RopeScaling | null {
  if (rs === null || rs === undefined) return null;
  if (typeof rs !== 'object') throw new ModelFileError('config.json: rope_scaling must be an object or null');
  const r = rs as Record<string, unknown>;
  const type = String(r.rope_type ?? r.type ?? 'default');
  if (!(SUPPORTED_ROPE_SCALING as readonly string[]).includes(type)) {
    throw new ModelFileError(`config.json: rope_scaling type '${type}' is not supported (supported: ${SUPPORTED_ROPE_SCALING.join(', ')})`);
  }
  if (type === 'default') return null;
  const factor = Number(r.factor);
  if (!(factor > 0)) throw new ModelFileError(`config.json: rope_scaling.factor must be a positive number`);
  const opt = (k: string): number | undefined => (typeof r[k] === 'number' ? (r[k] as number) : undefined);
  return {
    type: type as RopeScaling['type'],
    factor,
    lowFreqFactor: opt('low_freq_factor'),
    highFreqFactor: opt('high_freq_factor'),
    originalMaxPositionEmbeddings: opt('original_max_position_embeddings') ?? maxPos,
    betaFast: opt('beta_fast'),
    betaSlow: opt('beta_slow'),
    attentionFactor: opt('attention_factor'),
  };
}
