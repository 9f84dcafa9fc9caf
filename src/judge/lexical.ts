// The lexical judge: no model at all. It reads explicit feedback in the user's next message —
// thanks/perfect/great → +1; no/wrong/not what I asked/again/instead/meh/needs/next time → −1;
// otherwise 0 — with a negation rule ("not bad" is praise, "not great" is a complaint) that stays inside
// its clause ("Hmm, no dog? I meant…" does not negate "I meant"), and takes the corrective sentence as the
// hint ("No, I wanted a story about a dog." → "The user wants a story about a dog."; "It needs some
// dialogue." → "The user wants the response to have some dialogue.").
//
// Where it is weak: it only sees words, not meaning. It misses implicit dissatisfaction (the user
// silently rephrases the request), sarcasm ("great, another cat story"), and feedback in other
// languages; it cannot judge tool results beyond obvious error words. Use an LLM judge for those.
import type { Score } from '../learn/votes.ts';

export const POSITIVE = [
  'thanks', 'thank you', 'thx', 'ty', 'great', 'perfect', 'awesome', 'excellent', 'love it', 'loved it', 'love this', 'nice', 'good job',
  'well done', 'exactly', "that's it", 'that works', 'works now', 'wonderful', 'amazing', 'brilliant', 'fantastic', 'cool', 'helpful',
  'good', 'beautiful', 'lovely', 'yes', 'yay', 'correct', 'spot on', 'just what i wanted', 'just right',
  // how people praise a story for a child: the child's reaction, enjoyment, asking for another
  'loved', 'enjoyed', 'sweet', 'cute', 'adorable', 'delightful', 'charming', 'smiled', 'laughed', 'giggled', 'giggle', 'giggling',
  'thrilled', 'so much fun', 'that was fun', 'had fun', 'the best', 'just what we needed', 'just what i needed',
  'just what we wanted', 'another one', 'one more', 'tell another', 'more please', 'more like this',
  'just the right', 'right length', 'short and sweet',
];
export const NEGATIVE = [
  'no', 'nope', 'wrong', 'incorrect', 'not what i asked', 'not what i wanted', 'not what i meant', 'again', 'redo', 'try again', 'instead',
  'i wanted', 'i asked for', 'i asked', 'i meant', 'i said', "that's not", "doesn't work", "didn't work", 'does not work', 'broken', 'bad',
  'terrible', 'awful', 'useless', 'boring', 'too long', 'too short', 'shorter', 'longer', 'fix', 'mistake', 'not right', 'rather',
  'please change', 'stop', 'hate', "don't like", 'do not like', 'dislike', 'sad',
  // softer or suggestive feedback: a wish for the next answer says this one fell short
  'meh', 'next time', 'needs', 'it needs', 'needed', 'should have', 'could have', 'could be better', 'would be better',
  'would have been', 'could you include', 'can you include', 'include', 'can you add', 'could you add', 'please add', 'missing', 'lacks', 'lacking', 'forgot', 'not enough',
  'not quite', 'dull', 'bland', 'confusing', 'disappointing', 'disappointed', 'unfortunately', 'where is the', "where's the",
  'what about', 'not really', 'eh', 'hmm no', 'boo', 'lame', 'weird', 'odd', 'not sure about',
  // wishes and questions about what was not there ("I was hoping for…", "Can the next one have…", "Where was the…?")
  'hoping', 'hoped', 'i hope', 'we hope', 'would be nice', 'would love', 'would have loved', 'would have liked', "would've loved", "i'd love",
  'next one have', 'next one has', 'next one could', 'next one should', 'next story have', 'next story could', 'next story should',
  'could you put', 'can you put', 'maybe add', 'how about', 'where was', 'where were', 'where did', 'where are the', 'what happened to',
  'no sign of', 'left out', 'without', 'there was no', "there wasn't", 'not a single',
  // a story's length and mood, not a thing in it: how parents say a story was too long or too frightening
  'a bit long', 'so long', 'very long', 'long winded', 'lengthy', 'wordy', 'too many words', 'fewer words', 'less words', 'drag on',
  'dragged on', 'drags on', 'on and on', 'quicker', 'trim', 'cut it down', 'lost interest', 'too much',
  'scary', 'frightening', 'spooky', 'creepy', 'gloomy', 'upsetting', 'nightmare', 'nightmares',
];
const NEGATORS = new Set(['not', 'no', 'never', "isn't", "wasn't", "aren't", "don't", "doesn't", "didn't", 'hardly', 'barely']);
/** words that may stand between a negator and its cue ("not very good", "not so great") */
const INTENSIFIERS = new Set(['very', 'so', 'too', 'that', 'really', 'quite', 'at', 'all', 'as', 'exactly', 'particularly']);
/** phrases whose words look negative but that are praise or neutral */
const NEUTRALISE = ['no problem', 'no worries', 'not bad', 'no complaints', 'nothing wrong', 'not wrong', "can't complain", 'no issues'];

function normalise(text: string): string {
  return text.replace(/^\s*\[[^\]]*\d{4}[^\]]*\]\s*/, '') // OpenClaw's "[Sun 2026-11-22 01:42 UTC]" prefix
    .toLowerCase().replace(/[’`]/g, "'").replace(/\s+/g, ' ').trim();
}

/** Count cue phrases clause by clause, so that a negator never reaches across punctuation. */
function cues(text: string): { pos: number; neg: number } {
  let pos = 0, neg = 0;
  for (const clause of text.split(/[.!?;:,()\n]+/)) {
    const c = clauseCues(clause);
    pos += c.pos; neg += c.neg;
  }
  return { pos, neg };
}

/** Count cue phrases at word boundaries; a cue right after a negator counts for the other side. */
function clauseCues(clause: string): { pos: number; neg: number } {
  let t = ` ${clause.replace(/[^\p{L}\p{N}' ]/gu, ' ').replace(/\s+/g, ' ')} `;
  if (!t.trim()) return { pos: 0, neg: 0 };
  let pos = 0, neg = 0;
  for (const phrase of NEUTRALISE) {
    const n = t.split(` ${phrase} `).length - 1;
    if (n > 0) { if (phrase === 'not bad' || phrase === 'no complaints' || phrase === "can't complain") pos += n; t = t.split(` ${phrase} `).join(' _ '); }
  }
  const words = t.trim().split(' ');
  const countPhrase = (list: string[], onHit: (negated: boolean) => void) => {
    for (const phrase of [...list].sort((a, b) => b.split(' ').length - a.split(' ').length)) {
      const pw = phrase.split(' ');
      for (let i = 0; i + pw.length <= words.length; i++) {
        if (pw.every((w, j) => words[i + j] === w)) {
          const negated = (i > 0 && NEGATORS.has(words[i - 1])) || (i > 1 && NEGATORS.has(words[i - 2]) && INTENSIFIERS.has(words[i - 1]));
          onHit(negated);
          for (let j = 0; j < pw.length; j++) words[i + j] = '_'; // a word counts once
        }
      }
    }
  };
  countPhrase(NEGATIVE.filter((p) => p.includes(' ')), (n) => { if (n) pos++; else neg++; });
  countPhrase(POSITIVE, (n) => { if (n) neg++; else pos++; });
  countPhrase(NEGATIVE, (n) => { if (n) pos++; else neg++; });
  return { pos, neg };
}

/** an opening "no"/"nope" (not "no problem"): a rejection even when the rest is polite */
const OPENS_WITH_NO = /^(no|nope|nah)\b(?! (problem|worries))/;

/** words that turn praise into a correction or a wish ("Pretty good, but I like it better with a cat.", "It would be nice to have a tree in it.") */
const CONTRAST = /\b(but|though|although|however|except|yet|still|wish|only|if|would|could|should)\b/;

/**
 * Praise and nothing else: at least one praise cue, no complaint cue and no opening "no" ("Great, more like this
 * please."; not "Great, but where is the bear?", not "Nice. Next time add a cat."). The self judge's veto
 * (judge/judge.ts) reads it. A contrast ("but", "though", "only", "wish"…) makes it a correction.
 */
export function praiseOnly(nextState: string): boolean {
  const text = normalise(nextState);
  if (!text) return false;
  const { pos, neg } = cues(text);
  return pos > 0 && uncontested(text, neg);
}

/** No complaint cue, no opening "no" and no contrast: nothing in the (normalised) reply says the answer fell short. */
function uncontested(text: string, neg: number): boolean {
  return neg === 0 && !OPENS_WITH_NO.test(text) && !CONTRAST.test(text);
}

/**
 * A complaint and nothing else: at least one complaint cue (or an opening "no") and no praise cue ("It needs a cat.",
 * "Could the next one have a duck?", "There was no fish this time."; not "Nice story. Can the next one have cookies in
 * it?"). The self judge's word rule (judge/judge.ts) reads it.
 */
export function complaintOnly(nextState: string): boolean {
  const text = normalise(nextState);
  if (!text) return false;
  const { pos, neg } = cues(text);
  return pos === 0 && (neg > 0 || OPENS_WITH_NO.test(text));
}

/**
 * a request for the next answer, not a change to this one: "Now one about a cat.", "Next up: a kite story.", "Can you
 * do a duck one next?", "Tell me the next one.", "Another one about a robot?" — and not a wish for what the next one
 * should hold ("Put a cat in the next story.", "Can the next one happen in a castle?") nor "now make it …"
 */
const NEXT_REQUEST = [
  /\bnow\b,? (?:(?:can|could|will|would) you |please |let's |i want |i'd like |how about )?(?:one|a|an|another|tell|write|(?:do|give|make|try) (?:one|a|an|another|me|us))\b/,
  /(?:^|[.!?,;:] )next\b(?! time)/,
  /\b(?:story|one|tale) next\b|\bnext[?.!]*$/,
  /\b(?:tell|give|read|write) (?:me |us )?the next (?:one|story)\b/,
  /\b(?:another|one more)\b(?: one| story)?,? (?:about|with|where|on|featuring)\b/,
];

/**
 * A reply that moves on: it asks for a new answer ("Thank you. Now one with a kite.", "Cool, can you do a pirate story
 * next?") and has no complaint cue, no contrast and no opening "no". Its request names what the user wants next, not
 * what this answer lacked, so the self judge's word rule (judge/judge.ts) keeps its hint votes from reading it as a
 * correction. Not "Next time add a cat." nor "Nice, but can the next one have a cat?" (a wish: complaint cues).
 */
export function movesOn(nextState: string): boolean {
  const text = normalise(nextState);
  return !!text && NEXT_REQUEST.some((r) => r.test(text)) && uncontested(text, cues(text).neg);
}

export function lexicalScore(nextState: string): Score {
  const text = normalise(nextState);
  if (!text) return 0;
  const { pos, neg } = cues(text);
  const opensWithNo = OPENS_WITH_NO.test(text);
  const n = neg + (opensWithNo ? 1 : 0);
  if (pos > n) return 1;
  if (n > pos) return -1;
  return 0;
}

/** The corrective sentence of a reply, turned into an instruction where its shape allows. */
export function lexicalHint(nextState: string): string | null {
  const text = nextState.replace(/^\s*\[[^\]]*\d{4}[^\]]*\]\s*/, '').trim();
  const sentences = text.split(/(?<=[.!?])\s+|\n+/).map((s) => s.trim()).filter(Boolean);
  for (const raw of sentences) {
    // drop openings such as "Hmm, no," / "Nope." / "Actually," / "Meh," before the content
    const s = raw.replace(/^((no|nope|nah|hmm+|well|actually|ugh|meh|ok|okay|but|also|and)[,.!]*\s+)+/i, '').trim();
    const ask = /^(?:could|can|would|will)\s+you\s+(?:please\s+)?((?:include|add|make|use|write|give|put|mention|keep|remove|change|try|name|set)\b.+?)[?.!]*$/i.exec(s);
    if (ask && ask[1].split(/\s+/).length >= 2) return `The user wants the assistant to ${ask[1].replace(/,?\s*(please|next time|this time)$/i, '')}.`;
    const lacks = /^(?:it|this|the (?:story|answer|response|text|poem|ending))\s+(?:really\s+)?(needs|needed|should have|should include|lacks|is missing|was missing|could use)\s+(.+?)[.!]*$/i.exec(s);
    if (lacks && lacks[2].split(/\s+/).length >= 1) {
      const what = lacks[2].replace(/,?\s*please$/i, '');
      return /^to\s/i.test(what) ? `The user wants the response ${what}.` : `The user wants the response to have ${what}.`;
    }
    const m = /^(?:i|we)\s+(?:wanted|want|asked for|asked|meant|said|need|needed|would like|'d like)\s+(you to\s+)?(.+?)[.!]*$/i.exec(s);
    if (m && m[2].split(/\s+/).length >= 2) return m[1] ? `The user wants the assistant to ${m[2]}.` : `The user wants ${m[2].replace(/^to\s+/i, '')}.`;
    const instead = /^(.+?)\s+instead[.!]*$/i.exec(s);
    if (instead && instead[1].split(/\s+/).length >= 2) return `The user wants ${instead[1].replace(/^(please\s+)?(write|give me|make it|tell me)\s+/i, (x) => x.toLowerCase())} instead.`;
    if (/^(please\s+)?(make|write|use|keep|give|add|remove|don't|do not|avoid|change|tell)\b/i.test(s) && s.split(/\s+/).length >= 3) return s.replace(/[.!]*$/, '.');
  }
  return null;
}
