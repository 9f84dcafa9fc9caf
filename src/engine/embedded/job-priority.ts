// Background scoring yields to users. Scoring jobs (judge and OPD-teacher passes, PPO re-scoring)
// are training-side work; while a user-facing (normal-priority) request is waiting, prefilling or
// decoding in the engine, the engine thread (worker.ts) holds them back, so they delay neither a
// turn's first token nor its decode. A job held back for SCORING_MAX_WAIT_MS runs one pass and
// waits again, so it still progresses under constant traffic; that pass takes only the rows the
// pacer's decode credit allows (runtime.ts scoreSteps): none while users only prefill.

/** Longest stretch background scoring waits for user-facing requests before it runs one pass. */
export const SCORING_MAX_WAIT_MS = 5000;

/** Whether the next unit of a job named `name` may run now; `waitingSince` is when scoring began waiting (null: not waiting). */
export function scoringMayRun(name: string, usersInEngine: boolean, waitingSince: number | null, now: number): { run: boolean; waitingSince: number | null } {
  if ((name !== 'score' && name !== 'scoreTopK') || !usersInEngine) return { run: true, waitingSince: null };
  if (waitingSince === null) return { run: false, waitingSince: now };
  if (now - waitingSince < SCORING_MAX_WAIT_MS) return { run: false, waitingSince };
  return { run: true, waitingSince: now };
}

