// Fluency against the base model, as pure math: a sample is fluent when the base model finds it about
// as likely as its own samples (mean per-token log-likelihood at or above a low percentile of the base's
// own held-out samples) and it does not loop (no token n-gram repeated beyond a limit, no long run of
// one character). Policies that "learn" by breaking the text ("lllllll wasllanlll") fail both.

/** Mean of per-token log-probs; −Infinity for an empty sample (nothing said is not fluent). */
export function meanLogLikelihood(logprobs: ArrayLike<number>): number {
  if (logprobs.length === 0) return -Infinity;
  let s = 0;
  for (let i = 0; i < logprobs.length; i++) s += logprobs[i];
  return s / logprobs.length;
}

/** The p-quantile (0..1) of values, linear interpolation between order statistics. */
export function percentile(values: number[], p: number): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) throw new Error('percentile of no finite values');
  if (!(p >= 0 && p <= 1)) throw new Error(`percentile p must be in [0, 1], got ${p}`);
  const pos = p * (v.length - 1), lo = Math.floor(pos), hi = Math.ceil(pos);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

/** The fluency band: the lowest mean log-likelihood still counted fluent, from the base's own samples. */
export interface FluencyBand { lower: number; percentile: number; calibrationSamples: number }

export function fluencyBand(baseMeans: number[], p = 0.05): FluencyBand {
  return { lower: percentile(baseMeans, p), percentile: p, calibrationSamples: baseMeans.filter(Number.isFinite).length };
}

export interface RepetitionLimits {
  /** token n-gram length */
  n: number;
  /** an n-gram may occur at most this many times */
  maxRepeats: number;
  /** longest allowed run of one non-space character */
  maxCharRun: number;
}
export const REPETITION_DEFAULTS: RepetitionLimits = { n: 3, maxRepeats: 3, maxCharRun: 5 };

export interface RepetitionCheck { ok: boolean; maxNgramCount: number; longestCharRun: number }

/** Per token, how many times the token n-gram ending there has occurred so far, itself included (0 before the first full n-gram). */
export function ngramCounts(ids: ArrayLike<number>, n: number): number[] {
  const seen = new Map<string, number>(), out = new Array<number>(ids.length).fill(0);
  for (let i = 0; i + n <= ids.length; i++) {
    const key = Array.prototype.slice.call(ids, i, i + n).join(',');
    const c = (seen.get(key) ?? 0) + 1;
    seen.set(key, c);
    out[i + n - 1] = c;
  }
  return out;
}

/** Loops in a sample: the most frequent token n-gram's count and the longest run of one non-space character. */
export function repetitionCheck(ids: ArrayLike<number>, text: string, limits: RepetitionLimits = REPETITION_DEFAULTS): RepetitionCheck {
  let maxNgramCount = 0;
  for (const c of ngramCounts(ids, limits.n)) if (c > maxNgramCount) maxNgramCount = c;
  let longestCharRun = 0, run = 0, prev = '';
  for (const ch of text) {
    run = ch === prev && !/\s/.test(ch) ? run + 1 : 1;
    prev = ch;
    if (!/\s/.test(ch) && run > longestCharRun) longestCharRun = run;
  }
  return { ok: withinLimits({ maxNgramCount, longestCharRun }, limits), maxNgramCount, longestCharRun };
}

/** Whether a sample's counts stay within repetition limits (the same counts judged against another band's limits). */
export function withinLimits(counts: Omit<RepetitionCheck, 'ok'>, limits: RepetitionLimits): boolean {
  return counts.maxNgramCount <= limits.maxRepeats && counts.longestCharRun <= limits.maxCharRun;
}

/**
 * The repetition limit of a band from the base's own samples: the (1 − p)-quantile of their most frequent
 * n-gram counts, never below the fixed limit. A topic makes its own words recur: the base's stories about
 * a dog, written when asked for one, repeat a 3-token piece of "the dog" more than 3 times in 64 tokens
 * 15% of the time (stories260k-chat), which the fixed limit would count against the preference itself.
 */
export function repeatLimit(baseCounts: number[], p = 0.05, floor = REPETITION_DEFAULTS.maxRepeats): number {
  if (baseCounts.length === 0) return floor;
  return Math.max(floor, Math.ceil(percentile(baseCounts, 1 - p)));
}

/** Fluent: likely enough under the base model and free of loops. */
export function isFluent(meanLL: number, band: FluencyBand, repetition: RepetitionCheck): boolean {
  return meanLL >= band.lower && repetition.ok;
}
