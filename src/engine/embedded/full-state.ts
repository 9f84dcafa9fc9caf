// Checkpoints of full-parameter training: a complete Hugging Face model folder of the trained
// weights (so a checkpoint also loads as a model), plus optimizer.safetensors with the AdamW moments
// under the weights' own names (`<name>.exp_avg`, `<name>.exp_avg_sq`) and trainer_state.json with
// the step. Written to a temporary sibling, fsynced, and swapped in by rename.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig, type ModelConfig } from './config.ts';
import type { Arena } from './arena.ts';
import { loadWeights, type ModelWeights } from './weights.ts';
import { writeSafetensors, listModelTensorsIn, readTensorF32, ModelFileError, type TensorToWrite } from './safetensors.ts';
import { fillHfFolder, modelTensors, syncFolder } from './hf-export.ts';
import { writeFolderAtomically } from './peft.ts';
import { fullParams } from './full-weights.ts';
import type { FullTrainer, FullOptimizer } from './full-trainer.ts';

export const FULL_STATE_KIND = 'full-parameter';

/** Is `dir` a full-parameter training checkpoint (rather than a LoRA one)? */
export function isFullTrainingState(dir: string): boolean {
  const path = join(dir, 'trainer_state.json');
  if (!existsSync(path)) return false;
  try { return JSON.parse(readFileSync(path, 'utf8')).kind === FULL_STATE_KIND; } catch { return false; }
}

export function saveFullTrainingState(dir: string, sourceDir: string, cfg: ModelConfig, trainer: FullTrainer, version: number | null): void {
  writeFolderAtomically(dir, (tmp) => {
    fillHfFolder(tmp, sourceDir, modelTensors(cfg, trainer.weights, null));
    const moments: TensorToWrite[] = [];
    trainer.params.forEach((p, i) => {
      let row = 0;
      for (const [name, rows] of p.parts) {
        const shape = p.cols === 1 ? [rows] : [rows, p.cols];
        const span = (a: Float32Array) => a.subarray(row * p.cols, (row + rows) * p.cols);
        moments.push({ name: `${name}.exp_avg`, shape, data: span(trainer.optimizer.m[i]) }, { name: `${name}.exp_avg_sq`, shape, data: span(trainer.optimizer.v[i]) });
        row += rows;
      }
    });
    writeSafetensors(join(tmp, 'optimizer.safetensors'), moments);
    writeFileSync(join(tmp, 'trainer_state.json'), JSON.stringify({ kind: FULL_STATE_KIND, optimizerStep: trainer.optimizer.step, version }) + '\n');
    syncFolder(tmp);
  });
}

/** The weights (into `arena`) and optimizer state of a checkpoint, checked against the model's shapes. */
export function loadFullTrainingState(dir: string, cfg: ModelConfig, arena: Arena): { weights: ModelWeights; optimizer: FullOptimizer; version: number | null } {
  if (!isFullTrainingState(dir)) throw new ModelFileError(`${dir} is not a full-parameter training checkpoint (no trainer_state.json of kind '${FULL_STATE_KIND}')`);
  const saved = loadConfig(dir);
  for (const k of ['modelType', 'hiddenSize', 'intermediateSize', 'numLayers', 'numHeads', 'numKvHeads', 'headDim', 'vocabSize', 'tieWordEmbeddings'] as const) {
    if (saved[k] !== cfg[k]) throw new ModelFileError(`checkpoint ${dir} is of another model: its ${k} is ${saved[k]}, this model's is ${cfg[k]}`);
  }
  const state = JSON.parse(readFileSync(join(dir, 'trainer_state.json'), 'utf8'));
  const weights = loadWeights(dir, cfg, arena);
  const moments = listModelTensorsIn(join(dir, 'optimizer.safetensors'));
  const params = fullParams(cfg, weights);
  const optimizer: FullOptimizer = { step: Number(state.optimizerStep) || 0, m: [], v: [] };
  for (const p of params) {
    const m = new Float32Array(p.rows * p.cols), v = new Float32Array(p.rows * p.cols);
    let row = 0;
    for (const [name, rows] of p.parts) {
      for (const [suffix, into] of [['exp_avg', m], ['exp_avg_sq', v]] as const) {
        const t = moments.get(`${name}.${suffix}`);
        if (!t || t.shape.reduce((a, d) => a * d, 1) !== rows * p.cols) throw new ModelFileError(`optimizer.safetensors in ${dir} lacks '${name}.${suffix}' of ${rows * p.cols} values`);
        readTensorF32(t, into.subarray(row * p.cols, (row + rows) * p.cols));
      }
      row += rows;
    }
    optimizer.m.push(m); optimizer.v.push(v);
  }
  return { weights, optimizer, version: typeof state.version === 'number' ? state.version : null };
}
