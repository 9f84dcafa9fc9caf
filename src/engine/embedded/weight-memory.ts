// Where the weight matrices live. A 32-bit WebAssembly memory stops at 4 GiB, and the arena inside
// it also holds the KV caches, activations and adapters, so a model whose matrices take more than
// 3 GiB (Qwen3-1.7B in bf16, Qwen3-4B) cannot keep them there. Such a model's packed matrices get
// buffers of their own outside that memory ("external"), one ArrayBuffer per matrix, each the only
// copy: the native kernels read them in place by address, the TypeScript kernel reads them as
// arrays, and the WebAssembly kernels copy whole panels through a staging window inside their memory
// (kernels/wasm.ts). Norms and biases are small and stay in the arena.
import type { ModelConfig } from './config.ts';
import type { Arena } from './arena.ts';
import { packedSlots, type PackedMatrix, type WeightsDtype } from './kernels/packed.ts';
import { WASM_MEMORY_BYTES } from './kv-memory.ts';

export type WeightsPlacement = 'arena' | 'external';
/** 'auto': external when the matrices take more than EXTERNAL_ABOVE_BYTES */
export type PlacementChoice = WeightsPlacement | 'auto';

/** Matrices above this go outside the WebAssembly memory (1 GiB stays for KV caches and activations). */
export const EXTERNAL_ABOVE_BYTES = WASM_MEMORY_BYTES - 2 ** 30;

const CHOICES: readonly PlacementChoice[] = ['auto', 'arena', 'external'];

/** Bytes of every packed matrix of a model (embeddings, per-layer q/k/v, o, gate/up, down; an untied LM head). */
export function packedMatrixBytes(cfg: ModelConfig, dtype: WeightsDtype): number {
  const H = cfg.hiddenSize, I = cfg.intermediateSize, q = cfg.numHeads * cfg.headDim, kv = cfg.numKvHeads * cfg.headDim;
  const bytes = (rows: number, cols: number) => packedSlots(rows, cols, dtype) * 4;
  const layer = bytes(q + 2 * kv, H) + bytes(H, q) + bytes(2 * I, H) + bytes(H, I);
  return bytes(cfg.vocabSize, H) * (cfg.tieWordEmbeddings ? 1 : 2) + cfg.numLayers * layer;
}

/**
 * The placement for a model: `choice`, else OPENCLAW_RL_WEIGHTS_PLACEMENT (tests force 'external' on
 * small models with it), else 'auto'. Forcing 'arena' on matrices that cannot fit is an error.
 */
export function choosePlacement(cfg: ModelConfig, dtype: WeightsDtype, choice?: PlacementChoice): WeightsPlacement {
  const env = process.env.OPENCLAW_RL_WEIGHTS_PLACEMENT;
  if (!choice && env && !CHOICES.includes(env as PlacementChoice)) throw new Error(`OPENCLAW_RL_WEIGHTS_PLACEMENT must be one of ${CHOICES.join(', ')} (got '${env}')`);
  const c = choice ?? (env as PlacementChoice | undefined) ?? 'auto';
  const bytes = packedMatrixBytes(cfg, dtype);
  if (c === 'arena' && bytes > EXTERNAL_ABOVE_BYTES) {
    throw new Error(`the weight matrices take ${(bytes / 2 ** 30).toFixed(2)} GiB: more than the 4 GiB WebAssembly memory can hold beside the KV caches; they must be placed outside it (weights placement 'external' or 'auto')`);
  }
  return c === 'auto' ? (bytes > EXTERNAL_ABOVE_BYTES ? 'external' : 'arena') : c;
}

/** Float slots for one packed matrix: in the arena, or a buffer of its own (zero-filled, as the panels' padding needs). */
export function allocMatrix(slots: number, placement: WeightsPlacement, arena: Arena): Float32Array {
  // an explicit ArrayBuffer is always off the JS heap, so its address never moves (the native kernels keep it)
  return placement === 'external' ? new Float32Array(new ArrayBuffer(slots * 4)) : arena.alloc(slots);
}

/** Whether a matrix lives outside the WebAssembly memory (arena arrays are views of its shared buffer). */
export function isExternal(w: PackedMatrix): boolean {
  return !(w.data.buffer instanceof SharedArrayBuffer);
}
