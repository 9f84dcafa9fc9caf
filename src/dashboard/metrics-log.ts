// metrics.jsonl: one line per training step, per held-out evaluation and per rollback, appended to
// the data folder and never rewritten, so the curves survive restarts (a new process appends after
// the old lines). The lines are also kept in memory for the dashboard's polling, and forwarded to
// optional exporters (TensorBoard event files).
import { join } from 'node:path';
import { JsonlLog } from '../store/jsonl.ts';
import type { StepRecord } from '../trainer/loop.ts';

export interface StepLine extends StepRecord { event: 'step'; time: string }
export interface EvalLine {
  event: 'eval'; time: string;
  /** the optimizer step and weights version evaluated */
  step: number; version: number;
  prompts: number; samples: number;
  /** share of answers the judge scored +1, and the mean judge score in [-1, 1] (null: no judge) */
  judgeSatisfaction: number | null; judgeScoreMean: number | null;
  /** share of answers that met their item's rule (null: no item has a rule) */
  ruleSatisfaction: number | null;
  meanTokens: number; durationMs: number;
}
export interface RollbackLine { event: 'rollback'; time: string; target: number; version: number; step: number; fromVersion: number; fromStep: number; samplesSetAside: number }
export type MetricsLine = StepLine | EvalLine | RollbackLine;

/** Where lines go besides metrics.jsonl (e.g. a TensorBoard writer). */
export interface MetricsSink { write(line: MetricsLine): void; close?(): void }

export class MetricsLog {
  readonly file: string;
  private readonly log: JsonlLog;
  private readonly lines: MetricsLine[];
  private readonly sinks: MetricsSink[];

  constructor(dataDir: string, sinks: MetricsSink[] = []) {
    this.file = join(dataDir, 'metrics.jsonl');
    this.log = new JsonlLog(this.file);
    this.lines = this.log.read() as unknown as MetricsLine[];
    this.sinks = sinks;
  }

  private append(line: MetricsLine): void {
    this.log.append(line);
    this.lines.push(line);
    for (const s of this.sinks) s.write(line);
  }

  step(r: StepRecord): void { this.append({ event: 'step', time: new Date().toISOString(), ...r }); }
  eval(e: Omit<EvalLine, 'event' | 'time'>): void { this.append({ event: 'eval', time: new Date().toISOString(), ...e }); }
  rollback(r: Omit<RollbackLine, 'event' | 'time'>): void { this.append({ event: 'rollback', time: new Date().toISOString(), ...r }); }

  /** Lines from index `after` on (the dashboard polls with the count it has). */
  since(after = 0): { lines: MetricsLine[]; next: number } {
    const from = Math.max(0, Math.min(after, this.lines.length));
    return { lines: this.lines.slice(from), next: this.lines.length };
  }

  get count(): number { return this.lines.length; }

  close(): void {
    this.log.sync();
    for (const s of this.sinks) s.close?.();
  }
}

/** Read a data folder's metrics.jsonl without a running server (report, status). */
export function readMetrics(dataDir: string): MetricsLine[] {
  return new JsonlLog(join(dataDir, 'metrics.jsonl')).read() as unknown as MetricsLine[];
}
