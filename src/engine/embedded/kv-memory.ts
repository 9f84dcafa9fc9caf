// KV memory of the embedded engine, planned at admission. All KV caches (running requests, open
// scoring passes, the prefix cache) share one budget. Float32 caches in the arena get what fits in
// the 4 GiB WebAssembly memory beside the weights, a workspace sized for the largest step and some
// headroom (or less, by option). Paged bfloat16 caches (kv-pages.ts) live outside that memory: their
// budget is the model's full context plus the prefix cache's budget (or what --kv-memory-mib says).
// The context length the engine reports is what one sequence's KV can grow to within the budget.
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

/** `pagePositions`: caches grow in pages of that many positions (paged caches), else in powers of two */
export interface KvPlan { budgetBytes: number; contextLength: number; bytesPerPosition: number; pagePositions?: number }

/** The KV budget and the context length that fits in it. */
export function planKvMemory(i: KvPlanInput): KvPlan {
  const fits = Math.max(0, WASM_MEMORY_BYTES - i.usedBytes - i.workspaceBytes - HEADROOM_BYTES);
  const budgetBytes = Math.min(fits, (i.capMiB ?? Infinity) * 2 ** 20);
  const contextLength = Math.max(2, Math.min(i.modelContext, Math.floor(budgetBytes / i.bytesPerPosition)));
  return { budgetBytes, contextLength, bytesPerPosition: i.bytesPerPosition };
}

export interface PagedKvPlanInput {
  /** KV bytes per position (bfloat16 keys and values of every layer) */
  bytesPerPosition: number;
  pagePositions: number;
  modelContext: number;
  /** the prefix cache's budget: room for it beside one sequence of the full context */
  prefixCacheBytes: number;
  capMiB?: number;
}

/** The budget of paged caches: the model's whole context for one sequence plus the prefix cache, or the cap. */
export function planPagedKvMemory(i: PagedKvPlanInput): KvPlan {
  const pageBytes = i.pagePositions * i.bytesPerPosition;
  const full = Math.ceil(i.modelContext / i.pagePositions) * pageBytes + i.prefixCacheBytes;
  const budgetBytes = i.capMiB === undefined ? full : i.capMiB * 2 ** 20;
  const contextLength = Math.max(2, Math.min(i.modelContext, Math.floor(budgetBytes / pageBytes) * i.pagePositions));
  return { budgetBytes, contextLength, bytesPerPosition: i.bytesPerPosition, pagePositions: i.pagePositions };
}

/** KV bytes a sequence may grow to: its prompt plus its answer, within the context. */
export function plannedKvBytes(plan: KvPlan, promptTokens: number, maxTokens: number): number {
  const positions = Math.min(plan.contextLength, promptTokens + maxTokens);
  const P = plan.pagePositions;
  return (P ? Math.ceil(positions / P) * P : kvCapacity(positions, plan.contextLength)) * plan.bytesPerPosition;
}

/** Why a prompt cannot run at all (null when it can). */
export function contextProblem(plan: KvPlan, modelContext: number, promptTokens: number): string | null {
  if (promptTokens < plan.contextLength) return null;
  const where = plan.pagePositions ? 'in the KV memory budget (--kv-memory-mib)' : 'beside its weights in the 4 GiB WebAssembly memory';
  const why = plan.contextLength < modelContext ? ` (the model's is ${modelContext}, but KV caches of only ${plan.contextLength} positions fit ${where})` : '';
  return `the prompt has ${promptTokens} tokens; this engine's context is ${plan.contextLength} tokens${why}, and at least one must remain for the answer`;
}
