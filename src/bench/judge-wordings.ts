// How the judge reads replies it was never shown: sets of a story with a topic, one without it, and replies a user
// who wanted the topic would send after each (praise after the first, a complaint or a wish after the second). Every
// reply is judged with its story a few times; the tally says which share reaches the trainer with the right sign and
// which replies it misreads. The sets are written by hand (personas/judge/*.json) or drawn from a persona's feedback
// with two plain stories around its topic. Pure except for the judge calls.
import type { Judge } from '../judge/judge.ts';
import { check, type Persona } from './persona.ts';
import { judgeAgreement, type JudgeAgreement, type JudgedTurn } from './judge-agreement.ts';

export interface WordingSet {
  topic: string;
  /** a story with the topic (the satisfied replies follow it) and one without (the unsatisfied replies) */
  with: string; without: string;
  satisfied: string[]; unsatisfied: string[];
  /** where the set came from (a file, a persona) */
  source?: string;
}

export class WordingSetError extends Error { override name = 'WordingSetError'; }

/** A file's sets, checked: an array of {topic, with, without, satisfied[], unsatisfied[]}. */
export function parseWordingSets(json: unknown, source: string): WordingSet[] {
  if (!Array.isArray(json) || json.length === 0) throw new WordingSetError(`${source}: expected a non-empty array of wording sets`);
  return json.map((v, i) => {
    const at = `${source}[${i}]`;
    const o = v as Record<string, unknown>;
    const str = (k: string) => { if (typeof o?.[k] !== 'string' || !(o[k] as string).trim()) throw new WordingSetError(`${at}.${k} must be a non-empty string`); return o[k] as string; };
    const list = (k: string) => {
      const l = o?.[k];
      if (!Array.isArray(l) || l.length === 0 || !l.every((x) => typeof x === 'string' && x.trim())) throw new WordingSetError(`${at}.${k} must be a non-empty array of non-empty strings`);
      return l as string[];
    };
    return { topic: str('topic'), with: str('with'), without: str('without'), satisfied: list('satisfied'), unsatisfied: list('unsatisfied'), source };
  });
}

/** The two plain stories a persona's set is judged with, around its topic word. */
export const PERSONA_STORIES = {
  with: (topic: string) => `Once upon a time, there was a little girl named Lily. One day she found a ${topic} in the garden. She was very happy and played all day.`,
  without: 'Once upon a time, there was a little boy named Tim. He went to the park with his mom. They played on the swings and had fun.',
};
/** Stories for the rules that ask for no word: a length, or words to keep out. */
export const RULE_STORIES = {
  /** 19 words */
  short: 'Once upon a time, a little girl named Lily found a red ball. She played with it all day.',
  /** 68 words, nothing sad */
  long: 'Once upon a time, there was a little girl named Lily. She lived in a small house near the park with her mom and dad. ' +
    'Every morning she went outside to play with her red ball. One day she met a boy named Tim, and they played together ' +
    'until the sun went down. Then they ate cake and laughed, and Lily went to bed with a big smile.',
  happy: PERSONA_STORIES.without,
  sad: 'Once upon a time, a little boy named Tim lost his dog in the dark woods. He was scared and sad, and he began to cry. ' +
    'He felt all alone and afraid, and he was hurt and upset.',
};

/**
 * A persona's feedback as a set: praise after a story its rule accepts, complaints after one it rejects. A word rule
 * (`includes`) gets the plain stories around its word; a length rule (`maxWords`, `minWords`) a short and a long story;
 * an `avoid` rule a cheerful story and a sad one. Null when the rule is none of these, or the stories do not fall on
 * the two sides of it (a limit under 19 words, an avoid list without the sad story's words).
 */
export function wordingSetOfPersona(p: Persona): WordingSet | null {
  const rule = p.satisfied as { includes?: string[]; maxWords?: number; minWords?: number; avoid?: string[] };
  let topic: string, stories: { with: string; without: string };
  if (rule.includes?.[0]) { topic = rule.includes[0]; stories = { with: PERSONA_STORIES.with(topic), without: PERSONA_STORIES.without }; }
  else if (rule.maxWords !== undefined) { topic = `at most ${rule.maxWords} words`; stories = { with: RULE_STORIES.short, without: RULE_STORIES.long }; }
  else if (rule.minWords !== undefined) { topic = `at least ${rule.minWords} words`; stories = { with: RULE_STORIES.long, without: RULE_STORIES.short }; }
  else if (rule.avoid?.length) { topic = `no ${rule.avoid.slice(0, 3).join('/')}…`; stories = { with: RULE_STORIES.happy, without: RULE_STORIES.sad }; }
  else return null;
  if (!check(p.satisfied, stories.with) || check(p.satisfied, stories.without)) return null;
  return { topic, ...stories, satisfied: p.feedback.satisfied, unsatisfied: p.feedback.unsatisfied, source: p.name };
}

/**
 * The wording sets of personas. A persona whose rule has no stories on both sides of it (wordingSetOfPersona): named by
 * the user it is an error; in the default set (every shipped persona) it is skipped and listed.
 */
export function personaWordingSets(personas: { file: string; persona: Persona }[], named: boolean): { sets: WordingSet[]; skipped: string[] } {
  const sets: WordingSet[] = [], skipped: string[] = [];
  for (const { file, persona } of personas) {
    const set = wordingSetOfPersona(persona);
    if (set) sets.push(set);
    else if (named) throw new WordingSetError(`${file}: no plain stories fall on both sides of its rule (a word to include, a length of 19 words or more, or words to avoid), so its feedback cannot be judged after them`);
    else skipped.push(persona.name);
  }
  return { sets, skipped };
}

export interface MisreadReply { reply: string; satisfied: boolean; topic: string; scores: number[] }
export interface WordingsResult {
  sets: { topic: string; source?: string; agreement: JudgeAgreement; wrongSign: number }[];
  all: JudgeAgreement;
  /** share of judged replies scored with the opposite sign (praise −1, complaint +1): what trains the wrong way */
  wrongSign: number;
  /** replies judged with a wrong or no sign at least once, most often first */
  misread: MisreadReply[];
  judgements: number; seconds: number;
}

/** Share of the judged turns scored with the opposite sign of the user's verdict, from an agreement's tallies. */
function wrongSign(a: JudgeAgreement): number {
  const judged = (t: JudgeAgreement['satisfied']) => t.positive + t.neutral + t.negative;
  const n = judged(a.satisfied) + judged(a.unsatisfied);
  return n ? (a.satisfied.negative + a.unsatisfied.positive) / n : 0;
}

/** Judge every reply of every set `reps` times after its story. */
export async function judgeWordings(judge: Judge, sets: WordingSet[], reps: number, log?: (line: string) => void): Promise<WordingsResult> {
  const started = performance.now();
  const every: JudgedTurn[] = [], out: WordingsResult['sets'] = [], misread: MisreadReply[] = [];
  for (const set of sets) {
    const turns: JudgedTurn[] = [];
    for (const satisfied of [true, false]) {
      for (const reply of satisfied ? set.satisfied : set.unsatisfied) {
        const judged = await Promise.all(Array.from({ length: reps }, () => judge.judge({ response: satisfied ? set.with : set.without, nextState: { role: 'user', text: reply, looksLikeError: false } }, { hints: true })));
        const scores = judged.map((j) => j.score);
        for (const j of judged) turns.push({ satisfied, score: j.score, hint: j.hint });
        if (scores.some((s) => (satisfied ? s <= 0 : s >= 0))) misread.push({ reply, satisfied, topic: set.topic, scores });
      }
    }
    const agreement = judgeAgreement(turns), wrong = wrongSign(agreement);
    out.push({ topic: set.topic, source: set.source, agreement, wrongSign: wrong });
    log?.(`${set.topic}${set.source ? ` (${set.source})` : ''}: sign agreement ${((agreement.signAgreement ?? 0) * 100).toFixed(0)}%, wrong sign ${(wrong * 100).toFixed(0)}%`);
    every.push(...turns);
  }
  const wrongScores = (m: MisreadReply) => m.scores.filter((s) => (m.satisfied ? s < 0 : s > 0)).length;
  misread.sort((a, b) => wrongScores(b) - wrongScores(a) || a.reply.localeCompare(b.reply));
  const all = judgeAgreement(every);
  return { sets: out, all, wrongSign: wrongSign(all), misread, judgements: every.length, seconds: Math.round((performance.now() - started) / 100) / 10 };
}
