// Experiment tracking for a serving process, wired in one place for `serve` and the tests: the
// metrics.jsonl log (plus an optional TensorBoard writer), the archive of published versions for
// rollbacks, held-out evaluation, and the dashboard that shows them. The trainer reports through
// `onStep`; the trainer and evaluator are attached once created (the server starts before them).
import { resolve } from 'node:path';
import type { Store } from '../store/store.ts';
import type { TrainingEngine } from '../engine/types.ts';
import type { StepRecord, TrainerLoop } from '../trainer/loop.ts';
import { VersionArchive, rollback } from '../trainer/versions.ts';
import type { Evaluator } from '../trainer/evaluation.ts';
import { MetricsLog } from './metrics-log.ts';
import { TensorBoardWriter } from './tensorboard.ts';
import { Dashboard } from './routes.ts';
import { ApiError } from '../api/errors.ts';

export interface TrackingOptions {
  store: Store;
  engine: TrainingEngine;
  dataDir: string;
  modelId: string;
  judgeKind: string;
  /** false with --no-train: no versions to keep or roll back to */
  learning: boolean;
  /** write TensorBoard event files into this folder too */
  tensorboard?: string;
  /** versions kept on disk for rollbacks */
  keepVersions?: number;
  /** what samples and trains, as `serve --engine` names it (default embedded) */
  engineName?: string;
}

export class Tracking {
  readonly metricsLog: MetricsLog;
  readonly archive: VersionArchive;
  readonly dashboard: Dashboard;
  private trainer: TrainerLoop | null = null;
  private evaluator: Evaluator | null = null;
  private readonly engine: TrainingEngine;

  constructor(o: TrackingOptions) {
    this.engine = o.engine;
    this.metricsLog = new MetricsLog(o.dataDir, o.tensorboard ? [new TensorBoardWriter(resolve(o.tensorboard))] : []);
    this.archive = new VersionArchive(resolve(o.dataDir, 'checkpoints'), o.keepVersions ?? 20);
    this.dashboard = new Dashboard({
      store: o.store, modelId: o.modelId, engine: { ...o.engine.info, name: o.engineName ?? 'embedded' }, startedAt: Date.now(), metricsLog: this.metricsLog, judgeKind: o.judgeKind,
      trainer: () => this.trainer,
      keptVersions: () => (this.trainer ? this.archive.list() : []),
      rollback: o.learning ? (v) => {
        if (!this.trainer) return Promise.reject(new ApiError(409, 'the trainer is still starting; try again in a moment', { code: 'not_ready' }));
        return rollback(this.trainer, o.engine, o.store, this.archive, v);
      } : null,
      evaluation: () => this.evaluator?.status() ?? null,
    });
  }

  attach(trainer: TrainerLoop | null, evaluator: Evaluator | null = null): void { this.trainer = trainer; this.evaluator = evaluator; }

  /** The trainer's onStep hook: log the step, keep the published version, start a due evaluation. */
  readonly onStep = async (r: StepRecord): Promise<void> => {
    this.metricsLog.step(r);
    if (r.status === 'published' && r.version !== null) await this.archive.save(this.engine, r.version);
    this.evaluator?.afterStep(r);
  };

  /** The version new requests get. */
  publishedVersion(): number { return this.trainer?.version ?? 0; }

  close(): void { this.metricsLog.close(); }
}
