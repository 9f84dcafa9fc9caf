// Agent turns into the trainer's sample queue: one row per sampled turn, its advantage on every
// sampled token (or, with a reason, recorded as status 'none' and never trained on). Shared by the
// policy's rollouts (train.ts) and the judge's votes (judge-training.ts).
import type { Store } from '../store/store.ts';

export interface TurnSample {
  turnId: number;
  responseLength: number;
  reward: number | null;
  /** null: no training signal (then `reason` says why) */
  advantage: number | null;
  /** the weights version that sampled the turn */
  version: number;
  temperature: number;
  reason: string | null;
}

/** Queue the samples in one transaction; returns how many were queued for training. */
export function queueTurnSamples(store: Store, rows: TurnSample[]): number {
  let queued = 0;
  store.transaction(() => {
    const insert = store.sql(`INSERT INTO samples (turn_id, method, kind, reward, hint, advantages, loss_mask, teacher_logprobs, behaviour_version, temperature, status, reason, created_at)
      VALUES (?, 'agent', 'binary', ?, NULL, ?, ?, NULL, ?, ?, ?, ?, ?)`);
    for (const r of rows) {
      if (r.turnId < 0 || r.responseLength === 0) continue;
      const skip = r.reason !== null || r.advantage === null;
      insert.run(r.turnId, r.reward, JSON.stringify(skip ? [] : new Array(r.responseLength).fill(r.advantage)), JSON.stringify(skip ? [] : new Array(r.responseLength).fill(1)),
        Math.max(0, r.version), r.temperature, skip ? 'none' : 'pending', skip ? (r.reason ?? 'no advantage') : null, Date.now());
      if (!skip) queued++;
    }
  });
  return queued;
}
