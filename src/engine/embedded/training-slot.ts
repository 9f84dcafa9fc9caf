// What the embedded engine trains: at most one LoRA trainer or one full-parameter trainer at a time,
// with its checkpoints (PEFT adapter + optimizer moments, or a Hugging Face folder + moments). A
// loaded checkpoint hands back a snapshot of its weights for the engine to add as a new version,
// and the version it was saved at, so numbering continues from there.
import type { Transformer } from './model.ts';
import { LoraTrainer } from './trainer.ts';
import { FullTrainer } from './full-trainer.ts';
import { cloneWeights } from './full-weights.ts';
import { isFullTrainingState, saveFullTrainingState, loadFullTrainingState } from './full-state.ts';
import { saveTrainingState, loadTrainingState } from './peft.ts';
import type { LoraAdapter, LoraConfig } from './lora.ts';
import type { ModelWeights } from './weights.ts';
import { EngineError } from '../types.ts';

/** Weights to add as a version after loading a checkpoint, and the version the checkpoint was saved at. */
export interface LoadedState { adapter: LoraAdapter | null; weights?: ModelWeights; version: number | null }

export class TrainingSlot {
  trainer: LoraTrainer | null = null;
  fullTrainer: FullTrainer | null = null;
  private readonly model: Transformer;

  constructor(model: Transformer) { this.model = model; }

  /** A fresh LoRA adapter, or with `null` full-parameter training from the base weights. */
  configure(lora: Partial<LoraConfig> | null = {}): void {
    this.release();
    if (lora === null) this.fullTrainer = new FullTrainer(this.model);
    else this.trainer = new LoraTrainer(this.model, lora);
  }

  release(): void {
    this.trainer?.release(); this.trainer = null;
    this.fullTrainer?.release(); this.fullTrainer = null;
  }

  require(): LoraTrainer | FullTrainer {
    const tr = this.trainer ?? this.fullTrainer;
    if (!tr) throw new EngineError('bad_request', 'training is not configured: call configureTraining first');
    return tr;
  }

  /** The optimizer step of whatever is being trained (null when nothing is). */
  get optimizerStep(): number | null { return (this.trainer ?? this.fullTrainer)?.optimizer.step ?? null; }

  /** The weights being trained, as a version selector sees them ('current'). */
  current(): { adapter: LoraAdapter | null; weights?: ModelWeights } {
    if (this.fullTrainer) return { adapter: null, weights: this.fullTrainer.weights };
    if (!this.trainer) throw new EngineError('bad_request', "nothing is being trained: 'current' needs configureTraining first");
    return { adapter: this.trainer.adapter };
  }

  /** A snapshot of the trained weights, to become a version. */
  snapshot(): { adapter: LoraAdapter | null; weights?: ModelWeights } {
    if (this.fullTrainer) return { adapter: null, weights: cloneWeights(this.fullTrainer.weights, this.model.arena) };
    if (!this.trainer) throw new EngineError('bad_request', 'nothing to save: configureTraining first');
    return { adapter: this.trainer.adapter.clone() };
  }

  /** Checkpoint the trained weights with their optimizer state; `version` is the latest version given out. */
  save(dir: string, modelDir: string, modelId: string, version: number): void {
    if (this.fullTrainer) { saveFullTrainingState(dir, modelDir, this.model.cfg, this.fullTrainer, version); return; }
    const tr = this.require() as LoraTrainer;
    saveTrainingState(dir, tr.adapter, tr.optimizer, { baseModel: modelId, version });
  }

  /** Resume from a checkpoint (replacing whatever was trained). */
  load(dir: string): LoadedState {
    if (isFullTrainingState(dir)) {
      const full = loadFullTrainingState(dir, this.model.cfg, this.model.arena);
      this.release();
      const tr = this.fullTrainer = new FullTrainer(this.model, full.weights);
      full.optimizer.m.forEach((m, i) => tr.optimizer.m[i].set(m));
      full.optimizer.v.forEach((v, i) => tr.optimizer.v[i].set(v));
      tr.optimizer.step = full.optimizer.step;
      return { adapter: null, weights: cloneWeights(tr.weights, this.model.arena), version: full.version };
    }
    const state = loadTrainingState(dir, this.model.cfg, this.model.arena);
    this.release();
    const tr = this.trainer = new LoraTrainer(this.model, state.adapter.config, state.adapter);
    state.m.forEach((m, i) => tr.optimizer.m[i].set(m));
    state.v.forEach((v, i) => tr.optimizer.v[i].set(v));
    tr.optimizer.step = state.step;
    return { adapter: state.adapter.clone(), version: state.version };
  }
}
