// Evaluation while serving (`serve --eval-file prompts.jsonl --eval-every N`): after every N published
// steps, the held-out prompts are answered by the published weights at low priority (the engine admits
// them only when no user request waits) and scored — by the judge against what the item says the user
// wanted, and by the item's rule when it has one — so the curve of what users get sits beside the
// training curves. One evaluation at a time; a due one waits for the running one.
//
// An eval file holds one JSON object per line:
//   {"prompt": "Tell me a story", "criteria": "a story about a dog", "satisfied": {"includes": ["dog"]}}
//   {"messages": [{"role": "system", "content": "…"}, {"role": "user", "content": "…"}], "criteria": "…"}
// `criteria` (what the user wanted, shown to the judge) and `satisfied` (a rule, as in personas) are optional.
import { readFileSync } from 'node:fs';
import type { Engine } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import type { ChatMessage } from '../engine/embedded/tokenizer.ts';
import type { Judge } from '../judge/judge.ts';
import { check, validateRule, PersonaError, type Rule } from '../bench/persona.ts';
import type { StepRecord } from './loop.ts';
import type { EvalLine } from '../dashboard/metrics-log.ts';

export interface EvalItem { messages: ChatMessage[]; criteria: string | null; satisfied: Rule | null }

export class EvalFileError extends Error { override name = 'EvalFileError'; }

/** Parse an eval file; errors name the line and the field. */
export function parseEvalFile(text: string, file = 'eval file'): EvalItem[] {
  const items: EvalItem[] = [];
  text.split('\n').forEach((raw, i) => {
    const line = raw.trim();
    if (!line) return;
    const where = `${file} line ${i + 1}`;
    let v: Record<string, unknown>;
    try { v = JSON.parse(line); } catch (e) { throw new EvalFileError(`${where} is not JSON: ${(e as Error).message}`); }
    if (!v || typeof v !== 'object' || Array.isArray(v)) throw new EvalFileError(`${where} must be a JSON object with "prompt" or "messages"`);
    let messages: ChatMessage[];
    if (typeof v.prompt === 'string' && v.prompt.trim()) messages = [{ role: 'user', content: v.prompt }];
    else if (Array.isArray(v.messages) && v.messages.length && v.messages.every((m) => m && typeof m === 'object' && ['system', 'user', 'assistant'].includes((m as ChatMessage).role) && typeof (m as ChatMessage).content === 'string')) {
      messages = v.messages as ChatMessage[];
    } else throw new EvalFileError(`${where} needs "prompt" (a non-empty string) or "messages" (an array of {role: system|user|assistant, content: string})`);
    if (v.criteria !== undefined && typeof v.criteria !== 'string') throw new EvalFileError(`${where}: "criteria" must be a string`);
    let satisfied: Rule | null = null;
    if (v.satisfied !== undefined) {
      try { satisfied = validateRule(v.satisfied); } catch (e) { throw new EvalFileError(`${where}: ${(e as PersonaError).message}`); }
    }
    items.push({ messages, criteria: (v.criteria as string | undefined) ?? null, satisfied });
  });
  if (!items.length) throw new EvalFileError(`${file} has no items`);
  return items;
}

export function loadEvalFile(file: string): EvalItem[] {
  let text: string;
  try { text = readFileSync(file, 'utf8'); } catch (e) { throw new EvalFileError(`cannot read the eval file ${file}: ${(e as Error).message}`); }
  return parseEvalFile(text, file);
}

export interface EvaluatorOptions {
  every: number;
  /** answers per item (seeds 1, 2, …: the same answers for the same weights) */
  samples: number;
  maxTokens: number;
  temperature: number;
  log: (line: string) => void;
}

export const EVAL_DEFAULTS: Omit<EvaluatorOptions, 'log'> = { every: 10, samples: 2, maxTokens: 64, temperature: 1 };

export class Evaluator {
  private readonly engine: Engine;
  private readonly judge: Judge | null;
  private readonly items: EvalItem[];
  private readonly o: EvaluatorOptions;
  private readonly record: (line: Omit<EvalLine, 'event' | 'time'>) => void;
  private running: Promise<void> | null = null;
  private due: { step: number } | null = null;
  private closed = false;
  runs = 0;
  last: Omit<EvalLine, 'event' | 'time'> | null = null;

  constructor(engine: Engine, judge: Judge | null, items: EvalItem[], o: Partial<EvaluatorOptions>, record: (line: Omit<EvalLine, 'event' | 'time'>) => void) {
    this.engine = engine; this.judge = judge; this.items = items; this.record = record;
    this.o = { ...EVAL_DEFAULTS, log: () => {}, ...o };
  }

  /** The trainer's onStep hook: evaluate after every `every` published steps. */
  afterStep(r: StepRecord): void {
    if (r.status === 'published' && r.step !== null && r.step % this.o.every === 0) this.schedule(r.step);
  }

  /** Evaluate the published weights in the background (after the running evaluation, if any). */
  schedule(step: number): void {
    if (this.closed) return;
    this.due = { step };
    if (!this.running) this.running = this.drain().finally(() => { this.running = null; });
  }

  private async drain(): Promise<void> {
    while (this.due && !this.closed) {
      const { step } = this.due;
      this.due = null;
      try {
        const line = await this.evaluate(step);
        this.last = line;
        this.runs++;
        this.record(line);
        this.o.log(`eval: step ${step}, version ${line.version}: judge ${fmt(line.judgeSatisfaction)}, rule ${fmt(line.ruleSatisfaction)} (${line.samples} answers, ${(line.durationMs / 1000).toFixed(1)} s)`);
      } catch (e) {
        this.o.log(`eval: step ${step} failed: ${(e as Error).message}`);
      }
    }
  }

  /** Answer every item `samples` times with the published weights, and score the answers. */
  async evaluate(step: number): Promise<Omit<EvalLine, 'event' | 'time'>> {
    const t0 = performance.now();
    let judged = 0, judgedPlus = 0, scoreSum = 0, ruled = 0, ruledOk = 0, tokens = 0, n = 0, version = -1;
    for (const item of this.items) {
      const ids = this.engine.tokenizer.encodeChat(item.messages);
      for (let k = 0; k < this.o.samples; k++) {
        if (this.closed) throw new Error('stopped');
        const r = await collect(this.engine.sample(ids, { maxTokens: this.o.maxTokens, temperature: this.o.temperature, topP: 1, topK: 0, seed: k + 1, priority: 'low' }));
        if (version < 0) version = r.policyVersion;
        n++;
        tokens += r.ids.length;
        if (item.satisfied) { ruled++; if (check(item.satisfied, r.text)) ruledOk++; }
        if (this.judge && item.criteria) {
          const j = await this.judge.judge({
            response: r.text, context: item.messages,
            nextState: { role: 'user', text: `(held-out check, not a real reply) What the user wanted: ${item.criteria}`, looksLikeError: false },
          }, { hints: false });
          judged++;
          scoreSum += j.score;
          if (j.score === 1) judgedPlus++;
        }
      }
    }
    return {
      step, version, prompts: this.items.length, samples: n,
      judgeSatisfaction: judged ? judgedPlus / judged : null, judgeScoreMean: judged ? scoreSum / judged : null,
      ruleSatisfaction: ruled ? ruledOk / ruled : null, meanTokens: n ? tokens / n : 0, durationMs: performance.now() - t0,
    };
  }

  /** Resolves when no evaluation is running or due. */
  async idle(): Promise<void> { while (this.running) await this.running; }

  status(): Record<string, unknown> {
    return { prompts: this.items.length, every: this.o.every, samples: this.o.samples, runs: this.runs, running: this.running !== null, last: this.last };
  }

  /** Stop (the answer in progress finishes; nothing more is sampled). */
  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }
}

const fmt = (x: number | null) => (x === null ? '–' : `${(x * 100).toFixed(0)}%`);
