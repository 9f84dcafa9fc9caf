// Builds the engine `serve --engine vllm|sglang` runs on: the serving backend for sampling and
// scoring, and the training engine — the embedded engine (from the same model folder) or a Tinker
// server (`--trainer tinker`; its versions are stored as sampler checkpoints and downloaded as PEFT
// adapters for the serving engine to load).
import { EmbeddedEngine } from './embedded/engine.ts';
import { ServingEngine, type ServingBackend } from './serving.ts';
import type { KernelName } from './embedded/kernels/kernel.ts';
import type { TrainingEngine } from './types.ts';
import type { TinkerEngineOptions } from './tinker/engine.ts';

export interface ServingChoice {
  url: string;
  apiKey?: string;
  model?: string;
  /** the local model folder the trainer loads (the same base model the server serves) */
  modelDir: string;
  adapterDir: string;
  kernel?: KernelName;
  threads?: number;
  log?: (line: string) => void;
  /** what trains (default embedded) */
  trainer?: 'embedded' | 'tinker';
  /** the Tinker server when trainer is 'tinker' (tokenizerDir defaults to modelDir) */
  tinker?: Omit<TinkerEngineOptions, 'tokenizerDir' | 'samplerCheckpoints'>;
}

export async function servingEngine(kind: 'vllm' | 'sglang', c: ServingChoice): Promise<ServingEngine> {
  let backend: ServingBackend;
  if (kind === 'vllm') {
    const { VllmBackend } = await import('./vllm/backend.ts');
    backend = await VllmBackend.connect({ baseUrl: c.url, apiKey: c.apiKey, baseModel: c.model });
  } else {
    const { SglangBackend } = await import('./sglang/backend.ts');
    backend = await SglangBackend.connect({ baseUrl: c.url, apiKey: c.apiKey, baseModel: c.model });
  }
  let trainer: TrainingEngine;
  if (c.trainer === 'tinker') {
    if (!c.tinker) throw new Error('--trainer tinker needs the Tinker server (--tinker-url)');
    const { TinkerEngine } = await import('./tinker/engine.ts');
    trainer = await TinkerEngine.connect({ ...c.tinker, tokenizerDir: c.modelDir, samplerCheckpoints: 'named', log: c.tinker.log ?? c.log });
  } else trainer = await EmbeddedEngine.load(c.modelDir, { kernel: c.kernel, threads: c.threads });
  return new ServingEngine(backend, trainer, { adapterDir: c.adapterDir, log: c.log });
}
