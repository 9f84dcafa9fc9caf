// Adapters on disk in Hugging Face PEFT's format, so they load in PEFT and in vLLM
// (`--lora-modules`): adapter_config.json + adapter_model.safetensors with tensors named
// base_model.model.model.layers.N.{self_attn|mlp}.<target>.lora_{A,B}.weight ([r, in] and [out, r]).
// A training checkpoint adds the AdamW moments and step. Every folder is written to a temporary
// sibling, fsynced and swapped in by rename (util/atomic-folder.ts), so a crash leaves the old or the
// new folder, never a mix.
export { writeFolderAtomically };
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFolderAtomically } from '../../util/atomic-folder.ts';
import type { ModelConfig } from './config.ts';
import type { Arena } from './arena.ts';
import { LoraAdapter, LORA_TARGETS, validateLoraConfig, type LoraTarget } from './lora.ts';
import type { AdamW } from './optimizer.ts';
import { writeSafetensors, listModelTensorsIn, readTensorF32, ModelFileError, type TensorToWrite } from './safetensors.ts';

const MODULE_PARENT: Record<LoraTarget, string> = {
  q_proj: 'self_attn', k_proj: 'self_attn', v_proj: 'self_attn', o_proj: 'self_attn',
  gate_proj: 'mlp', up_proj: 'mlp', down_proj: 'mlp',
};

export function peftTensorName(layer: number, target: LoraTarget, which: 'A' | 'B'): string {
  return `base_model.model.model.layers.${layer}.${MODULE_PARENT[target]}.${target}.lora_${which}.weight`;
}

export interface PeftMeta { baseModel?: string; version?: number }

function writeAdapterFiles(dir: string, adapter: LoraAdapter, meta: PeftMeta): void {
  const c = adapter.config;
  const config = {
    peft_type: 'LORA', task_type: 'CAUSAL_LM', base_model_name_or_path: meta.baseModel ?? null,
    r: c.rank, lora_alpha: c.alpha, lora_dropout: 0, target_modules: c.targets, bias: 'none',
    fan_in_fan_out: false, use_rslora: false, use_dora: false, inference_mode: true, init_lora_weights: true,
    modules_to_save: null, layers_to_transform: null, revision: null,
  };
  writeFileSync(join(dir, 'adapter_config.json'), JSON.stringify(config, null, 2) + '\n');
  const tensors: TensorToWrite[] = [...adapter.tensors()].map((t) => ({ name: peftTensorName(t.layer, t.target, t.which), shape: t.shape, data: t.data }));
  writeSafetensors(join(dir, 'adapter_model.safetensors'), tensors, { format: 'pt', ...(meta.version !== undefined ? { openclaw_rl_version: String(meta.version) } : {}) });
}

export function saveAdapter(dir: string, adapter: LoraAdapter, meta: PeftMeta = {}): void {
  writeFolderAtomically(dir, (tmp) => writeAdapterFiles(tmp, adapter, meta));
}

/** Load a PEFT LoRA folder for `model`, checking the config and every tensor's name and shape. */
export function loadAdapter(dir: string, model: ModelConfig, arena: Arena): LoraAdapter {
  const cfgPath = join(dir, 'adapter_config.json');
  if (!existsSync(cfgPath)) throw new ModelFileError(`adapter_config.json not found in ${dir} (expected a PEFT LoRA adapter folder)`);
  let raw: Record<string, unknown>;
  try { raw = JSON.parse(readFileSync(cfgPath, 'utf8')); } catch (e) { throw new ModelFileError(`adapter_config.json in ${dir} is not valid JSON: ${(e as Error).message}`); }
  if (raw.peft_type !== undefined && raw.peft_type !== 'LORA') throw new ModelFileError(`adapter type ${String(raw.peft_type)} is not supported (only LORA)`);
  if (raw.use_dora === true) throw new ModelFileError('DoRA adapters are not supported');
  if (raw.use_rslora === true) throw new ModelFileError('rsLoRA adapters (use_rslora: true) are not supported');
  if (raw.fan_in_fan_out === true) throw new ModelFileError('fan_in_fan_out adapters are not supported');
  const targetsRaw = raw.target_modules;
  const targets = (Array.isArray(targetsRaw) ? targetsRaw : typeof targetsRaw === 'string' ? [targetsRaw] : []).map(String);
  for (const t of targets) if (!(LORA_TARGETS as readonly string[]).includes(t)) throw new ModelFileError(`adapter targets module '${t}', which the embedded engine cannot adapt (supported: ${LORA_TARGETS.join(', ')})`);
  let config;
  try {
    config = validateLoraConfig({ rank: Number(raw.r), alpha: Number(raw.lora_alpha ?? raw.r), targets: LORA_TARGETS.filter((t) => targets.includes(t)) });
  } catch (e) {
    throw new ModelFileError(`adapter_config.json: ${(e as Error).message}`);
  }
  const tensors = listModelTensorsIn(join(dir, 'adapter_model.safetensors'));
  const adapter = LoraAdapter.create(model, config, arena, 'zeros');
  try {
    for (const t of adapter.tensors()) {
      const name = peftTensorName(t.layer, t.target, t.which);
      const info = tensors.get(name);
      if (!info) throw new ModelFileError(`adapter is missing tensor '${name}'`);
      if (info.shape.join(',') !== t.shape.join(',')) throw new ModelFileError(`adapter tensor '${name}' has shape [${info.shape.join(', ')}], this model needs [${t.shape.join(', ')}]`);
      readTensorF32(info, t.data);
    }
  } catch (e) {
    adapter.free();
    throw e;
  }
  return adapter;
}

/** The folder where saveTrainingState keeps the checkpoint it replaced (a fallback if DIR is found corrupt). */
export const previousCheckpointOf = (dir: string) => `${dir}.previous`;

/**
 * Adapter + AdamW state + step, for resuming training exactly. trainer_state.json is written last;
 * the checkpoint it replaces is kept at previousCheckpointOf(dir).
 */
export function saveTrainingState(dir: string, adapter: LoraAdapter, optimizer: AdamW, meta: PeftMeta = {}): void {
  writeFolderAtomically(dir, (tmp) => {
    writeAdapterFiles(tmp, adapter, meta);
    const moments: TensorToWrite[] = [];
    [...adapter.tensors()].forEach((t, i) => {
      const name = peftTensorName(t.layer, t.target, t.which);
      moments.push({ name: `${name}.exp_avg`, shape: t.shape, data: optimizer.m[i] }, { name: `${name}.exp_avg_sq`, shape: t.shape, data: optimizer.v[i] });
    });
    writeSafetensors(join(tmp, 'optimizer.safetensors'), moments);
    writeFileSync(join(tmp, 'trainer_state.json'), JSON.stringify({ optimizerStep: optimizer.step, version: meta.version ?? null }) + '\n');
  }, { previous: previousCheckpointOf(dir) });
}

export function loadTrainingState(dir: string, model: ModelConfig, arena: Arena): { adapter: LoraAdapter; m: Float32Array[]; v: Float32Array[]; step: number; version: number | null } {
  const adapter = loadAdapter(dir, model, arena);
  try {
    return { adapter, ...readOptimizerState(dir, adapter) };
  } catch (e) {
    adapter.free();
    throw e;
  }
}

function readOptimizerState(dir: string, adapter: LoraAdapter): { m: Float32Array[]; v: Float32Array[]; step: number; version: number | null } {
  const statePath = join(dir, 'trainer_state.json');
  if (!existsSync(statePath)) throw new ModelFileError(`${dir} holds an adapter but no trainer_state.json (not a training checkpoint)`);
  let state: { optimizerStep?: unknown; version?: unknown };
  try { state = JSON.parse(readFileSync(statePath, 'utf8')); } catch (e) { throw new ModelFileError(`${statePath} is not valid JSON (${(e as Error).message})`); }
  if (!state || typeof state !== 'object' || !Number.isInteger(state.optimizerStep)) throw new ModelFileError(`${statePath} holds no optimizer step`);
  const moments = listModelTensorsIn(join(dir, 'optimizer.safetensors'));
  const m: Float32Array[] = [], v: Float32Array[] = [];
  for (const t of adapter.tensors()) {
    const name = peftTensorName(t.layer, t.target, t.which);
    const em = moments.get(`${name}.exp_avg`), ev = moments.get(`${name}.exp_avg_sq`);
    if (!em || !ev) throw new ModelFileError(`optimizer.safetensors is missing the moments of '${name}'`);
    m.push(readTensorF32(em)); v.push(readTensorF32(ev));
  }
  return { m, v, step: state.optimizerStep as number, version: typeof state.version === 'number' ? state.version : null };
}
