// `openclaw-rl bench hint`: how the model reads a hint, the ceiling of what OPD can distil for a persona. The OPD
// teacher is the model answering the request with a hint appended (learn/hint-prompt.ts); distillation moves the
// policy towards the teacher's answers, so when the teacher's own answers miss the preference, or meet it in text the
// base finds unlikely, no amount of distillation teaches the preference fluently. For each hint, the base weights
// answer the persona's held-out requests with the hint, at the evaluation's seeds and sampling settings, and every
// answer is scored exactly as the evaluation scores the policy's (bench/evaluate.ts, scoreAnswer: satisfaction,
// fluency by the plain or preference band, loops). The row without a hint is the base's own evaluation.
import type { Engine } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import { userTextWithHint } from '../learn/hint-prompt.ts';
import { scoreAnswer, scoringPrompt, promptIds, EVAL_SEED, type EvaluatedSample, type FluencyBands } from './evaluate.ts';
import type { Persona } from './persona.ts';
import { median } from './stats.ts';

export interface HintReadingRow {
  /** the hint appended to each request (null: the plain request, the base's own answers) */
  hint: string | null;
  samples: number;
  satisfiedRate: number;
  fluentRate: number;
  satisfiedAndFluentRate: number;
  /** of the satisfying answers, the share that is fluent (null: none satisfied) */
  fluentWhenSatisfied: number | null;
  /** median base log-likelihood per token of the satisfying answers, on the plain request (null: none satisfied) */
  satisfiedMedianLogLikelihood: number | null;
  /** up to three satisfying answers, as written */
  examples: string[];
}

export interface HintReading { persona: string; k: number; rows: HintReadingRow[]; seconds: number }

/** One row's numbers from its scored answers. */
export function summarize(hint: string | null, samples: EvaluatedSample[]): HintReadingRow {
  const n = Math.max(1, samples.length), sat = samples.filter((x) => x.satisfied);
  return {
    hint, samples: samples.length,
    satisfiedRate: sat.length / n,
    fluentRate: samples.filter((x) => x.fluent).length / n,
    satisfiedAndFluentRate: sat.filter((x) => x.fluent).length / n,
    fluentWhenSatisfied: sat.length ? sat.filter((x) => x.fluent).length / sat.length : null,
    satisfiedMedianLogLikelihood: sat.length ? median(sat.map((x) => x.baseMeanLogLikelihood)) : null,
    examples: sat.slice(0, 3).map((x) => x.text),
  };
}

/** The base weights' answers to the held-out requests under each hint (null: none), scored as the evaluation scores. */
export async function readHints(engine: Engine, persona: Persona, bands: FluencyBands, hints: (string | null)[], k: number, log: (line: string) => void = () => {}): Promise<HintReading> {
  const t0 = performance.now(), rows: HintReadingRow[] = [];
  // every hint's answers are scored on the same requests: their ids are encoded once
  const requests = persona.heldOutPrompts.map((prompt) => scoringPrompt(engine, prompt, bands));
  for (const hint of hints) {
    const samples: EvaluatedSample[] = [];
    for (const at of requests) {
      const ids = hint === null ? at.plainIds : promptIds(engine, userTextWithHint(at.prompt, hint));
      for (let i = 0; i < k; i++) {
        const seed = EVAL_SEED(i);
        const r = await collect(engine.sample(ids, { maxTokens: persona.maxTokens ?? 48, temperature: persona.temperature ?? 1, topP: 1, topK: 0, seed, weights: 'base' }));
        samples.push(await scoreAnswer(engine, persona, bands, at, r, seed));
      }
    }
    const row = summarize(hint, samples);
    rows.push(row);
    log(`${hint === null ? '(no hint)' : JSON.stringify(hint)}: satisfied ${pct(row.satisfiedRate)}, satisfied-and-fluent ${pct(row.satisfiedAndFluentRate)}, fluent ${pct(row.fluentRate)}${row.fluentWhenSatisfied !== null ? `, fluent when satisfied ${pct(row.fluentWhenSatisfied)}, median log-likelihood of those ${row.satisfiedMedianLogLikelihood!.toFixed(2)}` : ''}`);
  }
  return { persona: persona.name, k, rows, seconds: +((performance.now() - t0) / 1000).toFixed(1) };
}

const pct = (x: number) => `${Math.round(x * 100)}%`;
