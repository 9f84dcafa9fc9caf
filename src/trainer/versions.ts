// Published weights versions kept on disk, and rolling back to one of them.
//
// After each publish the trained adapter and its optimizer state are saved under
// <checkpointDir>/versions/v<N> (the newest `keep` are kept). Rolling back to N loads that state into
// the trainer, publishes it as a new version (version numbers only grow, so every request still
// names the weights it got), and sets aside the samples trained by the undone steps as
// 'rolled_back' (they are not trained again: the point of a rollback is to forget them). Version 0
// is the base model: rolling back to it starts a fresh adapter.
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainingEngine } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import type { TrainerLoop } from './loop.ts';

export class RollbackError extends Error { override name = 'RollbackError'; }

export class VersionArchive {
  readonly dir: string;
  readonly keep: number;
  constructor(checkpointDir: string, keep = 20) { this.dir = join(checkpointDir, 'versions'); this.keep = keep; }

  path(version: number): string { return join(this.dir, `v${version}`); }

  /** Versions that can be rolled back to (0, the base model, always can). */
  list(): number[] {
    const saved = existsSync(this.dir)
      ? readdirSync(this.dir).map((n) => /^v(\d+)$/.exec(n)).filter((m) => m && existsSync(join(this.dir, m[0], 'trainer_state.json'))).map((m) => Number(m![1]))
      : [];
    return [0, ...saved.sort((a, b) => a - b)];
  }

  has(version: number): boolean { return version === 0 || existsSync(join(this.path(version), 'trainer_state.json')); }

  /** Save the trainer's state as `version` (call right after publishing it), then drop the oldest beyond `keep`. */
  async save(engine: TrainingEngine, version: number): Promise<void> {
    await engine.saveTrainingState(this.path(version));
    const saved = this.list().filter((v) => v > 0);
    for (const v of saved.slice(0, Math.max(0, saved.length - this.keep))) rmSync(this.path(v), { recursive: true, force: true });
  }
}

export interface RollbackResult { target: number; version: number; step: number; from: { version: number; step: number }; samplesSetAside: number }

/** Roll the trainer (and what new requests get) back to the weights of `target`, between steps. */
export function rollback(trainer: TrainerLoop, engine: TrainingEngine, store: Store, archive: VersionArchive, target: number): Promise<RollbackResult> {
  if (!Number.isInteger(target) || target < 0) return Promise.reject(new RollbackError(`version must be a non-negative integer (got ${target})`));
  return trainer.exclusive(async () => {
    const from = { version: trainer.version, step: trainer.step };
    if (!archive.has(target)) {
      throw new RollbackError(`version ${target} is not kept on disk (kept: ${archive.list().join(', ')})`);
    }
    let version: number, step: number;
    if (target === 0) {
      await engine.configureTraining(trainer.o.lora);
      version = 0;
      step = 0;
    } else {
      const state = JSON.parse(readFileSync(join(archive.path(target), 'trainer_state.json'), 'utf8')) as { optimizerStep: number };
      version = await engine.loadTrainingState(archive.path(target));
      step = state.optimizerStep;
    }
    // a number above every version ever served, recorded before it is served (see Store.recordVersion)
    const floor = store.versionFloor();
    if (version <= floor) version = await engine.saveWeights({ atLeast: floor + 1 });
    store.recordVersion(version, step, 'rollback');
    await engine.publish(version);
    trainer.version = version;
    trainer.step = step;
    await trainer.refreshCanary();
    const reason = `rolled back to version ${target} (from version ${from.version})`;
    const samplesSetAside = store.transaction(() => {
      const n = Number(store.sql(`UPDATE samples SET status = 'rolled_back', reason = ? WHERE status = 'trained' AND step > ?`).run(reason, step).changes);
      store.sql(`UPDATE training_steps SET status = 'rolled_back' WHERE status = 'published' AND step > ?`).run(step);
      store.sql(`INSERT INTO training_steps (step, status, version, samples, tokens, reason, created_at) VALUES (?, 'rollback', ?, 0, 0, ?, ?)`).run(step, version, reason, Date.now());
      return n;
    });
    // a restart resumes from the rolled-back weights, and the new version can itself be rolled back to
    await engine.saveTrainingState(join(trainer.o.checkpointDir, 'latest'));
    await archive.save(engine, version);
    trainer.o.log(`trainer: ${reason}; now version ${version} at step ${step}, ${samplesSetAside} sample(s) set aside`);
    return { target, version, step, from, samplesSetAside };
  });
}
