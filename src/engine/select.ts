// Builds the engine `serve --engine vllm|sglang` runs on: the serving backend for sampling and
// scoring, and the embedded engine (from the same model folder) for training.
import { EmbeddedEngine } from './embedded/engine.ts';
import { ServingEngine, type ServingBackend } from './serving.ts';
import type { KernelName } from './embedded/kernels/kernel.ts';

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
  const trainer = await EmbeddedEngine.load(c.modelDir, { kernel: c.kernel, threads: c.threads });
  return new ServingEngine(backend, trainer, { adapterDir: c.adapterDir, log: c.log });
}
