// Evaluation of the live policy: held-out satisfaction (k samples per held-out prompt at the serving
// temperature, fixed seeds), drift as KL(policy‖base) on neutral prompts (Monte Carlo: sampled from
// the policy at T = 1, mean of log π − log π_base per token), and the log-likelihood of a fixed
// reference text. Held-out evaluation also reports satisfied-AND-fluent: each sample is scored by the
// base model, and it counts as fluent when its mean per-token log-likelihood is inside the band of the
// base's own held-out samples (calibrated once, on other seeds) and it does not loop (src/learn/fluency.ts).
//
// A persona that states its preference (`preference`, e.g. "The user wants a story about a cat.") gets a
// second band for the samples that satisfy it: the base's own satisfying samples for the request with the
// preference added as a hint, scored on that hinted request. A satisfying sample is then fluent when the
// base model finds it as likely as its own satisfying stories written for the preference; any other
// sample is held to the plain band. Scored only on the plain request, the base's own fluent cat stories
// fall below the plain band far more often than its other stories (the topic words are unlikely there),
// so the plain band alone counts the preference itself as a loss of fluency. Both verdicts are kept:
// `fluentPlain` is the plain band's alone. The preference band also carries its own repetition limit,
// from the same samples (src/learn/fluency.ts, repeatLimit): a topic's words recur in the base's own
// stories about it.
import { repeatShare } from '../learn/repeat-guard.ts';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import { baseMeanLogLikelihood } from '../engine/base-likelihood.ts';
import { check, type Persona } from './persona.ts';
import { userTextWithHint } from '../learn/hint-prompt.ts';
import { fluencyBand, isFluent, repeatLimit, repetitionCheck, withinLimits, REPETITION_DEFAULTS, type FluencyBand } from '../learn/fluency.ts';
import { distinctNgrams } from '../learn/variety.ts';

export const NEUTRAL_PROMPTS = ['Once upon a time', 'The sun was', 'One day', 'They went home'];
export const REFERENCE_TEXT = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park.';

export function promptIds(engine: Engine, text: string): number[] {
  return engine.tokenizer.encodeChat([{ role: 'user', content: text }]);
}

export async function satisfactionRate(engine: Engine, persona: Persona, k: number, weights: 'published' | 'base' = 'published'): Promise<number> {
  let ok = 0, n = 0;
  for (const p of persona.heldOutPrompts) {
    const ids = promptIds(engine, p);
    for (let i = 0; i < k; i++) {
      const r = await collect(engine.sample(ids, { maxTokens: persona.maxTokens ?? 48, temperature: persona.temperature ?? 1, topP: 1, topK: 0, seed: 7919 * i + 17, weights }));
      if (check(persona.satisfied, r.text)) ok++;
      n++;
    }
  }
  return ok / n;
}

export async function klToBase(engine: Engine, samplesPerPrompt = 4, maxTokens = 32): Promise<number> {
  let sum = 0, tokens = 0;
  for (const p of NEUTRAL_PROMPTS) {
    const ids = promptIds(engine, p);
    for (let i = 0; i < samplesPerPrompt; i++) {
      const r = await collect(engine.sample(ids, { maxTokens, temperature: 1, topP: 1, topK: 0, seed: 104729 * i + 3 }));
      if (r.ids.length === 0) continue;
      const [base] = await engine.score([{ promptIds: ids, responseIds: r.ids }], { adapter: 'base' });
      for (let t = 0; t < r.ids.length; t++) sum += r.logprobs[t] - base[t];
      tokens += r.ids.length;
    }
  }
  return tokens ? sum / tokens : 0;
}

export async function referenceLogLikelihood(engine: Engine): Promise<number> {
  const prompt = engine.tokenizer.encode('');
  const full = engine.tokenizer.encode(REFERENCE_TEXT);
  const response = full.slice(prompt.length);
  const [lp] = await engine.score([{ promptIds: prompt, responseIds: response }]);
  return lp.reduce((a, b) => a + b, 0) / Math.max(1, lp.length);
}

/** One evaluated sample, with everything that decided its verdicts. */
export interface EvaluatedSample {
  prompt: string; seed: number; text: string; tokens: number; satisfied: boolean; fluent: boolean;
  baseMeanLogLikelihood: number; maxNgramCount: number; longestCharRun: number;
  /** fluent by the plain band alone; and a satisfying sample's base mean log-likelihood on the request with the preference (when the persona states one) */
  fluentPlain: boolean; basePreferenceMeanLogLikelihood?: number;
}
export interface HeldOutEvaluation {
  rate: number; fluentRate: number; satisfiedAndFluentRate: number;
  /** the same by the plain band alone (equal to the above when the persona states no preference) */
  plainFluentRate: number; plainSatisfiedAndFluentRate: number;
  /** distinct token bigrams over all of the evaluation's samples (learn/variety.ts): falls when answers collapse onto one */
  distinct2: number;
  /** share of samples that repeat an earlier sample to the same prompt word for word (learn/repeat-guard.ts): 0 at the base */
  repeatRate: number;
  samples: EvaluatedSample[];
}

/**
 * The plain band, and the preference band when the persona states its preference and the base, given it as a hint,
 * wrote enough satisfying samples to draw one (preferenceSamples: how many it wrote, when a preference is stated).
 */
export interface FluencyBands { plain: FluencyBand; preference: (FluencyBand & { hint: string; maxRepeats: number }) | null; preferenceSamples?: number }

/**
 * Satisfying base samples a preference band needs. Fewer, and satisfying samples are held to the plain band: a
 * 5th percentile of a handful of values is not a band, and a model that cannot write the topic at all even when
 * asked (stories260k-chat and hats: 0 of 100) has none.
 */
export const PREFERENCE_BAND_MIN_SAMPLES = 20;

/** A line for the progress output when a stated preference got no band of its own, else null. */
export function preferenceBandNote(bands: FluencyBands, persona: Persona, k: number): string | null {
  if (!persona.preference || bands.preference || bands.preferenceSamples === undefined) return null;
  const asked = persona.heldOutPrompts.length * Math.max(k, CALIBRATION_MIN_K);
  return `the base model, given the preference as a hint, satisfied it in ${bands.preferenceSamples} of ${asked} samples (fewer than ${PREFERENCE_BAND_MIN_SAMPLES}): satisfying samples are held to the plain band`;
}

/** The sampling seed of a held-out request's i-th evaluated answer (the same at every version, so versions differ by weights alone). */
export const EVAL_SEED = (i: number) => 7919 * i + 17;
const CALIBRATION_SEED = (i: number) => 6007 * i + 100_003; // never equal to an evaluation seed for the k used here

/** Base samples per held-out prompt for the fluency bands: at least this many, whatever the evaluation's k. */
export const CALIBRATION_MIN_K = 20;

/**
 * The fluency band from the base model's own samples on the held-out prompts (seeds disjoint from
 * evaluation), and for a persona that states its preference, the band of the base's satisfying samples
 * for the requests with that preference as a hint, scored on the hinted requests.
 */
export async function calibrateFluency(engine: Engine, persona: Persona, k: number, p = 0.05): Promise<FluencyBands> {
  const n = Math.max(k, CALIBRATION_MIN_K);
  const calibrate = async (text: (prompt: string) => string, keep: (sample: string) => boolean) => {
    const means: number[] = [], repeats: number[] = [];
    for (const prompt of persona.heldOutPrompts) {
      const ids = promptIds(engine, text(prompt));
      for (let i = 0; i < n; i++) {
        const r = await collect(engine.sample(ids, { maxTokens: persona.maxTokens ?? 48, temperature: persona.temperature ?? 1, topP: 1, topK: 0, seed: CALIBRATION_SEED(i), weights: 'base' }));
        if (!keep(r.text)) continue;
        means.push(await baseMeanLogLikelihood(engine, ids, r.ids));
        repeats.push(repetitionCheck(r.ids, r.text).maxNgramCount);
      }
    }
    return { band: means.length ? fluencyBand(means, p) : null, maxRepeats: repeatLimit(repeats, p), samples: means.length };
  };
  const plain = (await calibrate((x) => x, () => true)).band;
  if (!plain) throw new Error('the base model wrote no scorable sample for the held-out requests: no fluency band can be drawn');
  const hint = persona.preference;
  if (!hint) return { plain, preference: null };
  const pref = await calibrate((x) => userTextWithHint(x, hint), (t) => check(persona.satisfied, t));
  if (!pref.band || pref.samples < PREFERENCE_BAND_MIN_SAMPLES) return { plain, preference: null, preferenceSamples: pref.samples };
  return { plain, preference: { ...pref.band, hint, maxRepeats: pref.maxRepeats }, preferenceSamples: pref.samples };
}

/**
 * calibrateFluency, remembered on disk: the bands depend only on the base weights, the persona's
 * held-out requests, rule, preference and sampling settings, and k (fixed seeds), so runs of the same
 * persona on the same model share them (calibration is 200 base samples, a large part of a short run).
 * The key covers the model folder's weights files (size and modification time) and all of those inputs.
 */
export async function calibrateFluencyCached(engine: Engine, modelDir: string, persona: Persona, k: number, dir = join(tmpdir(), 'openclaw-rl-fluency-bands')): Promise<FluencyBands & { cached: boolean }> {
  const weights = readdirSync(modelDir).filter((f) => f.endsWith('.safetensors')).sort().map((f) => { const st = statSync(join(modelDir, f)); return [f, st.size, st.mtimeMs]; });
  const key = createHash('sha256').update(JSON.stringify({
    // v and the sample floor: a band cached under an older rule is not this code's band
    v: 3, minPreferenceSamples: PREFERENCE_BAND_MIN_SAMPLES, model: realpathSync(modelDir), weights, prompts: persona.heldOutPrompts, rule: persona.satisfied, preference: persona.preference ?? null,
    maxTokens: persona.maxTokens ?? 48, temperature: persona.temperature ?? 1, n: Math.max(k, CALIBRATION_MIN_K),
  })).digest('hex').slice(0, 32);
  const file = join(dir, `${key}.json`);
  if (existsSync(file)) {
    try { return { ...(JSON.parse(readFileSync(file, 'utf8')) as FluencyBands), cached: true }; } catch { /* calibrate again */ }
  }
  const bands = await calibrateFluency(engine, persona, k);
  mkdirSync(dir, { recursive: true });
  writeFileSync(file, JSON.stringify(bands));
  return { ...bands, cached: false };
}

/** A held-out request as the scoring reads it: its prompt ids, and with the stated preference as a hint when it has a band. */
export interface ScoringPrompt { prompt: string; plainIds: number[]; hintedIds: number[] | null }

/** The ids an answer to `prompt` is scored on, encoded once per request rather than once per answer. */
export function scoringPrompt(engine: Engine, prompt: string, bands: FluencyBands): ScoringPrompt {
  return { prompt, plainIds: promptIds(engine, prompt), hintedIds: bands.preference ? promptIds(engine, userTextWithHint(prompt, bands.preference.hint)) : null };
}

/**
 * One answer to a held-out request, scored as the evaluation scores it: satisfaction by the persona's rule; fluency by
 * the base model's likelihood of it on the plain request (the plain band) or, when it satisfies a stated preference, on
 * the request with that preference as a hint (the preference band, with its own repetition limit); loops.
 */
export async function scoreAnswer(engine: Engine, persona: Persona, bands: FluencyBands, at: ScoringPrompt, answer: { ids: number[]; text: string }, seed: number): Promise<EvaluatedSample> {
  const ll = await baseMeanLogLikelihood(engine, at.plainIds, answer.ids);
  const satisfied = check(persona.satisfied, answer.text);
  const llPref = at.hintedIds && satisfied ? await baseMeanLogLikelihood(engine, at.hintedIds, answer.ids) : null;
  const rep = repetitionCheck(answer.ids, answer.text);
  const fluentPlain = isFluent(ll, bands.plain, rep);
  return {
    prompt: at.prompt, seed, text: answer.text, tokens: answer.ids.length, satisfied,
    fluent: llPref !== null ? isFluent(llPref, bands.preference!, { ...rep, ok: withinLimits(rep, { ...REPETITION_DEFAULTS, maxRepeats: bands.preference!.maxRepeats }) }) : fluentPlain, fluentPlain,
    baseMeanLogLikelihood: +ll.toFixed(4), ...(llPref !== null ? { basePreferenceMeanLogLikelihood: +llPref.toFixed(4) } : {}),
    maxNgramCount: rep.maxNgramCount, longestCharRun: rep.longestCharRun,
  };
}

/** Held-out satisfaction, fluency and satisfied-and-fluent of the live policy, with every sample's text. */
export async function evaluateHeldOut(engine: Engine, persona: Persona, k: number, bands: FluencyBands, weights: 'published' | 'base' = 'published'): Promise<HeldOutEvaluation> {
  const samples: EvaluatedSample[] = [], answers: number[][] = [];
  for (const prompt of persona.heldOutPrompts) {
    const at = scoringPrompt(engine, prompt, bands);
    for (let i = 0; i < k; i++) {
      const seed = EVAL_SEED(i);
      const r = await collect(engine.sample(at.plainIds, { maxTokens: persona.maxTokens ?? 48, temperature: persona.temperature ?? 1, topP: 1, topK: 0, seed, weights }));
      answers.push(r.ids);
      samples.push(await scoreAnswer(engine, persona, bands, at, r, seed));
    }
  }
  const n = Math.max(1, samples.length);
  const share = (f: (x: EvaluatedSample) => boolean) => samples.filter(f).length / n;
  return {
    rate: share((x) => x.satisfied), fluentRate: share((x) => x.fluent), satisfiedAndFluentRate: share((x) => x.satisfied && x.fluent),
    plainFluentRate: share((x) => x.fluentPlain), plainSatisfiedAndFluentRate: share((x) => x.satisfied && x.fluentPlain), distinct2: distinctNgrams(answers, 2), repeatRate: repeatShare(samples), samples,
  };
}
