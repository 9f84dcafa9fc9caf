// Judge votes → training signals. Pure functions.
//
// PRM votes: each judge answer ends with \boxed{1}, \boxed{0} or \boxed{-1}; the last box counts,
// anything else is a failed vote. The majority over valid votes is the reward; a tie, or no valid
// vote, is 0 (neutral).
// Hint votes: \boxed{1} plus a hint between [HINT_START] and [HINT_END], or \boxed{-1}. The longest
// useful hint among positive votes wins; one positive vote is enough. `hintAgreement` tells which votes'
// hints n votes gave: measured on the self judge, which copies names from the story into some hints, keeping
// only those dropped most wrong hints but did not raise learning, so the judge does not apply it
// (docs/benchmarks.md, issue 12 session 13; bench/judge-feedback.ts reports it).

export type Score = -1 | 0 | 1;

const BOXED = /\\boxed\{\s*([+-]?)\s*(\d+)\s*\}/g;

/** The last \boxed{…} score in a judge's answer, or null when there is none or it is not -1, 0 or 1. */
export function parseBoxed(text: string): Score | null {
  let last: RegExpExecArray | null = null;
  for (const m of text.matchAll(BOXED)) last = m;
  if (!last) return null;
  const v = Number(`${last[1] === '-' ? '-' : ''}${last[2]}`);
  return v === 1 || v === 0 || v === -1 ? (v === 0 ? 0 : v) as Score : null;
}

export function majority(votes: (Score | null)[]): Score {
  const counts = new Map<Score, number>();
  for (const v of votes) if (v !== null) counts.set(v, (counts.get(v) ?? 0) + 1);
  if (counts.size === 0) return 0;
  const ranked = [...counts].sort((a, b) => b[1] - a[1]);
  if (ranked.length > 1 && ranked[0][1] === ranked[1][1]) return 0;
  return ranked[0][0];
}

export interface HintVote { score: 1 | -1 | null; hint: string | null }

/** A recorded hint vote (a judge's, or one read back from a stored judgement) as the hint rules take it. */
export function hintVoteOf(v: { score?: number | null; hint?: string | null }): HintVote {
  return { score: v.score === 1 || v.score === -1 ? v.score : null, hint: v.hint ?? null };
}

const hintKey = (h: string) => h.trim().toLowerCase().replace(/\s+/g, ' ');

/**
 * For each vote, whether its hint was given by at least `minVotes` positive votes (the same hint ignoring case
 * and spacing); votes without a positive hint are true (nothing to agree on). minVotes ≤ 1: every vote is.
 */
export function hintAgreement(votes: HintVote[], minVotes: number): boolean[] {
  const counts = new Map<string, number>();
  for (const v of votes) if (v.score === 1 && v.hint) counts.set(hintKey(v.hint), (counts.get(hintKey(v.hint)) ?? 0) + 1);
  return votes.map((v) => minVotes <= 1 || v.score !== 1 || !v.hint || (counts.get(hintKey(v.hint)) ?? 0) >= minVotes);
}

const HINT = /\[HINT_START\]([\s\S]*?)\[HINT_END\]/g;

export function parseHintVote(text: string): HintVote {
  const s = parseBoxed(text);
  let hint: string | null = null;
  for (const m of text.matchAll(HINT)) hint = m[1].trim();
  return { score: s === 1 || s === -1 ? s : null, hint };
}

/**
 * Hints that say only that the answer was bad carry nothing to learn from. A hint is trivial when,
 * after lower-casing and dropping punctuation, it is one of these phrasings (or only such words).
 */
const TRIVIAL = [
  /^(the )?(response|answer|reply|output|assistant)( was| is)? (wrong|incorrect|bad|not good|unhelpful|not helpful|not what (the )?user wanted)$/,
  /^(be|try to be) (more )?(helpful|better|accurate|correct)$/,
  /^(do|try) (it )?(better|again)$/,
  /^(no hint|none|n\/a|nothing)$/,
  /^(the user (was|is) (unhappy|not satisfied|dissatisfied))$/,
];

export function isTrivialHint(hint: string): boolean {
  const h = hint.toLowerCase().replace(/[^\p{L}\p{N}\s/]/gu, '').replace(/\s+/g, ' ').trim();
  return TRIVIAL.some((r) => r.test(h));
}

/** The longest non-trivial hint (stripped length > minLength) among positive votes, or null. */
export function selectHint(votes: HintVote[], minLength = 10): string | null {
  let best: string | null = null;
  for (const v of votes) {
    if (v.score !== 1 || !v.hint) continue;
    const h = v.hint.trim();
    if (h.length <= minLength || isTrivialHint(h)) continue;
    if (!best || h.length > best.length) best = h;
  }
  return best;
}

/**
 * Every accepted hint of a turn, as upstream's top-K OPD takes its teacher candidates: positive votes'
 * non-trivial hints longer than minLength, duplicates (ignoring case and spacing) removed, shortest
 * first, at most max of them.
 */
export function acceptedHints(votes: HintVote[], max = 3, minLength = 10): string[] {
  const seen = new Set<string>(), out: string[] = [];
  for (const v of votes) {
    if (v.score !== 1 || !v.hint) continue;
    const h = v.hint.trim(), key = hintKey(h);
    if (h.length <= minLength || isTrivialHint(h) || seen.has(key)) continue;
    seen.add(key);
    out.push(h);
  }
  return out.sort((a, b) => a.length - b.length).slice(0, max);
}

/** The grades a satisfaction judge may give (upstream's personalization evaluator). */
export const SATISFACTION_GRADES = [0, 0.25, 0.5, 0.75, 1] as const;
const BOXED_NUMBER = /\\boxed\{\s*([0-9]*\.?[0-9]+)\s*\}/g;

/** The last \boxed{…} grade in a judge's answer: one of 0, 0.25, 0.5, 0.75, 1 (also written .5, 1.0), else null. */
export function parseBoxedGrade(text: string): number | null {
  let last: RegExpExecArray | null = null;
  for (const m of text.matchAll(BOXED_NUMBER)) last = m;
  if (!last) return null;
  const v = Number(last[1]);
  return (SATISFACTION_GRADES as readonly number[]).includes(v) ? v : null;
}

/** Mean of the valid grades, or null when no vote was valid. */
export function meanGrade(grades: (number | null)[]): number | null {
  const ok = grades.filter((g): g is number => g !== null);
  return ok.length ? ok.reduce((a, b) => a + b, 0) / ok.length : null;
}

// Reading hints against the turn. A small judge's hint votes make things up: the self judge of stories260k-chat
// names characters from the story or objects from nowhere ("The user wants a story about a box." after "Good one,
// thanks."). A hint is hindsight from the next state, so what it asks for should be words the next state used:
// a hint is grounded when one of its content words (its words less the words hints are framed with) occurs in
// the next state's text. And a grounded hint that asks for something the answer does not contain at all says
// the answer missed what the user wants, whatever the score votes read into the reply's tone ("My daughter only
// likes stories with bears." after a story with no bear).

/** Words that frame a hint rather than say what it asks for. */
const HINT_FRAME = new Set(('a an the this that these those it its is are was were be been to of in on at by for from with about as and or ' +
  'user users wants want wanted wanting likes like liked love loves should would could can will please make made write written ' +
  'answer response assistant reply story stories tale one ones more next time again another some any only every each kind same ' +
  'have has had include includes including character characters someone somebody hero named name called his her their them they').split(' '));
/** A hint with one of these asks for an absence: "no dragons" is not missing from a story without dragons. */
const NEGATION = new Set(['no', 'not', 'without', 'never', 'less', 'fewer', 'none', 'nothing', "don't", 'dont', "doesn't", 'doesnt', "didn't", 'didnt',
  "isn't", "won't", 'stop', 'avoid']);

const hintWords = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}']+/gu) ?? [];
/** Plural and possessive endings off, so "bears" meets "bear" and "Zoe's" meets "Zoe". */
const stem = (w: string) => w.replace(/'s$/, '').replace(/(?<=[^s])s$/, '');

/** The words of a hint that say what it asks for, stemmed. */
export function hintContentWords(hint: string): string[] {
  return hintWords(hint).filter((w) => !HINT_FRAME.has(w) && !NEGATION.has(w) && w.length > 1).map(stem);
}

/**
 * Words that ground one another: a hint about a story's length or mood rests on whatever words the reply used about it
 * ("The user wants a short story." after "That went on and on, way too long."; "…nothing sad in it." after "He got
 * scared."). Any other word grounds only itself.
 */
const GROUNDING_FAMILIES: readonly (readonly string[])[] = [
  ['short', 'shorter', 'shortest', 'long', 'longer', 'length', 'lengthy', 'brief', 'quick', 'quicker', 'wordy', 'words', 'trim'],
  ['happy', 'happier', 'sad', 'sadder', 'scary', 'scared', 'scare', 'cheerful', 'gentle', 'calm', 'cry', 'cried', 'crying', 'tears',
    'upset', 'upsetting', 'afraid', 'frightening', 'frightened', 'fear', 'gloomy', 'nightmares', 'hurt'],
];
const FAMILY_OF = new Map(GROUNDING_FAMILIES.flatMap((f, i) => f.map((w) => [stem(w), `family ${i}`] as const)));
const groundingKey = (w: string) => FAMILY_OF.get(w) ?? w;

/** Whether a hint asks for something in the next state's own words: one of its content words (or one of its family) occurs there. */
export function isGroundedHint(hint: string, nextStateText: string): boolean {
  const seen = new Set(hintWords(nextStateText).map((w) => groundingKey(stem(w))));
  return hintContentWords(hint).some((w) => seen.has(groundingKey(w)));
}

/** For each content word of a hint, whether the answer has it; null when the hint asks for an absence ("no dragons"). */
function contentInAnswer(hint: string, answer: string): boolean[] | null {
  if (hintWords(hint).some((w) => NEGATION.has(w))) return null;
  const seen = new Set(hintWords(answer).map(stem));
  return hintContentWords(hint).map((w) => seen.has(w));
}

/** Whether a hint asks for something the answer lacks entirely: it has content words, none occur in the answer, and it asks for no absence. */
export function hintMissingFrom(hint: string, answer: string): boolean {
  const found = contentInAnswer(hint, answer);
  return !!found && found.length > 0 && found.every((f) => !f);
}

/**
 * Whether a hint asks for something the answer already has: it has content words, every one occurs in the answer, and
 * it asks for no absence. A reply whose grounded hints the answer already meets names a thing the answer has ("that
 * bunny made her giggle" after a story with a bunny): a complaint about something missing would not.
 */
export function hintMetBy(hint: string, answer: string): boolean {
  const found = contentInAnswer(hint, answer);
  return !!found && found.length > 0 && found.every((f) => f);
}

/**
 * The first position whose text so far meets the hint (hintMetBy on prefixes[t], the answer's text through token t),
 * or null when no prefix does. A word counts only once something follows it (or the answer ends there), so a prefix
 * ending in "fis", or in a "fish" the next token may turn into "fishing", does not meet "… about a fish."
 */
export function hintMetAt(hint: string, prefixes: readonly string[]): number | null {
  for (let t = 0; t < prefixes.length; t++) {
    const text = t === prefixes.length - 1 ? prefixes[t] : prefixes[t].replace(/[\p{L}\p{N}']+$/u, '');
    if (hintMetBy(hint, text)) return t;
  }
  return null;
}
