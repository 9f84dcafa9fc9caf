// KV memory of the embedded engine, planned at admission. All KV caches (running requests, open
// scoring passes, the prefix cache) share one budget: what fits in the 4 GiB WebAssembly memory
// beside the weights, a workspace sized for the largest step and some headroom (or less, by
// option). The context length the engine reports is what one sequence's KV can grow to within it.
// A request is admitted only when the KV it may grow to (prompt + max tokens) fits, evicting
// prefix-cache entries to make room, so nothing runs out of memory mid-stream.
import { kvCapacity } from './kv-cache.ts';

/** Arena memory kept free beside the weights and the KV caches (workspace, logits, adapters). */
export const HEADROOM_BYTES = 256 * 2 ** 20;
export const WASM_MEMORY_BYTES = 4 * 2 ** 30;

export interface KvPlanInput {
  /** bytes already used in the arena (weights) */
  usedBytes: number;
  /** bytes of the step workspace at the largest chunk */
  workspaceBytes: number;
  /** KV bytes per position (keys and values of every layer) */
  bytesPerPosition: number;
  /** the model's own context length */
  modelContext: number;
  /** optional cap in MiB */
  capMiB?: number;
}

export interface KvPlan { budgetBytes: number; contextLength: number; bytesPerPosition: number }

/** The KV budget and the context length that fits in it. */
export function planKvMemory(i: KvPlanInput): KvPlan {
  const fits = Math.max(0, WASM_MEMORY_BYTES - i.usedBytes - i.workspaceBytes - HEADROOM_BYTES);
  const budgetBytes = Math.min(fits, (i.capMiB ?? Infinity) * 2 ** 20);
  const contextLength = Math.max(2, Math.min(i.modelContext, Math.floor(budgetBytes / i.bytesPerPosition)));
  return { budgetBytes, contextLength, bytesPerPosition: i.bytesPerPosition };
}

/** KV bytes a sequence may grow to: its prompt plus its answer, within the context. */
export function plannedKvBytes(plan: KvPlan, promptTokens: number, maxTokens: number): number {
  const positions = Math.min(plan.contextLength, promptTokens + maxTokens);
  return kvCapacity(positions, plan.contextLength) * plan.bytesPerPosition;
}

/** Why a prompt cannot run at all (null when it can). */
export function contextProblem(plan: KvPlan, modelContext: number, promptTokens: number): string | null {
  if (promptTokens < plan.contextLength) return null;
  const why = plan.contextLength < modelContext ? ` (the model's is ${modelContext}, but KV caches of only ${plan.contextLength} positions fit beside its weights in the 4 GiB WebAssembly memory)` : '';
  return `the prompt has ${promptTokens} tokens; this engine's context is ${plan.contextLength} tokens${why}, and at least one must remain for the answer`;
}
