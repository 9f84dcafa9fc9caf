// The conversations stories260k-chat is taught with (and, from the held-out phrasings, tested on).
// Every kind is generated from the phrasing sets and the base model's story pool with a seeded
// generator, so the same seed gives the same file:
// - requests: topic, name, topic+name, short, happy and plain requests answered by stories that
//   satisfy them;
// - hints: a plain request carrying a hindsight hint in the OPD teacher form, answered as the hint says;
// - feedback: a correction ("No, I wanted a dog.") answered by a story that complies, or praise
//   followed by another story;
// - judging: the self judge's compact PRM and hint prompts ending in the right verdict;
// - style (v8): hints, corrections and judge cases about a story's length and mood rather than a word in it;
// - tools: arithmetic through a calculator tool call, its result, then the answer — and, on purpose,
//   some direct (wrong) answers, so agent RL has room to improve the habit.
import type { ChatMessage, ToolSpec } from '../../engine/types.ts';
import { Rng } from '../../engine/embedded/rng.ts';
import { userTextWithHint } from '../../learn/hint-prompt.ts';
import { compactPrmPrompt, compactHintPrompt, looksLikeError, type JudgeInput } from '../../judge/prompts.ts';
import { TOPICS, NAMES, JUDGE_HINT, TOOL_ERRORS, fill, phrasingSets, type PhrasingSets } from './phrasings.ts';
import { mentionsTopic, mentionsName, cutAtSentence, isHappy, isShort, SHORT_WORDS, type StoryPool } from './stories.ts';

export const CALCULATOR_TOOL: ToolSpec = {
  type: 'function',
  function: {
    name: 'calculator',
    description: 'Evaluate an arithmetic expression.',
    parameters: { type: 'object', properties: { expression: { type: 'string', description: 'e.g. 12 + 7' } }, required: ['expression'] },
  },
};

export type Kind = 'topic' | 'name' | 'topicName' | 'short' | 'happy' | 'plain' | 'hint' | 'feedback' | 'praise' | 'prm' | 'hintJudge' | 'tool' | 'noTool' | 'implicitJudge'
  | 'styleHint' | 'styleFeedback' | 'styleJudge';
// new kinds come last: the conversations of the kinds before them are drawn exactly as before (implicitJudge since v5,
// the style kinds since v8)
export const KINDS: Kind[] = ['topic', 'name', 'topicName', 'short', 'happy', 'plain', 'hint', 'feedback', 'praise', 'prm', 'hintJudge', 'tool', 'noTool', 'implicitJudge',
  'styleHint', 'styleFeedback', 'styleJudge'];

/**
 * `topic`: the topic the last answer was chosen to carry (requests, hints and corrections that ask for one).
 * `copies`: text the answers copy from the prompt or a tool result (a tool call's expression, the tool's result),
 * and whether its first or last place in the answers is the copy.
 */
export interface Conversation { kind: Kind; messages: ChatMessage[]; tools?: ToolSpec[]; topic?: string; copies?: { text: string; at: 'first' | 'last' }[] }
export type Mix = Record<Kind, number>;

/** The full recipe's mix (conversations per kind). */
export const FULL_MIX: Mix = {
  // v6: 118 topics where v5 had 12, with more topic requests, hints and corrections (~34, 31 and 12 a topic)
  topic: 4000, name: 130, topicName: 100, short: 100, happy: 100, plain: 150, hint: 3600, feedback: 1400, praise: 120,
  // implicitJudge 0: 500 such cases raised held-out implicit corrections from 46% to 72% but lost bear's own feedback
  // (77% → 63%); docs/benchmarks.md "Feedback without a no".
  // v6: judge and tool conversations doubled or raised with the rest: with v5's 1,000/1,000/1,200/400 among the larger
  // mix the tool calls kept their format but not the question's numbers (accuracy 87% → 2%, docs/benchmarks.md "Recipe v6")
  prm: 1300, hintJudge: 1300, tool: 2400, noTool: 800, implicitJudge: 0,
  // the length and the mood of a story, in hints, corrections and PRM judge cases: 0. A build with 400/200/600 (v8,
  // tried in session 35) read length and mood feedback far better (bench judge: 60–73% → 80–90% on blind length
  // personas) but did not teach the teacher to read a length hint, so the policy learnt "short" from the reward alone,
  // by collapsing onto a few stories or losing its text (docs/benchmarks.md "Recipe v8 tried"). v9 and v10 (session 36)
  // added complaints in the judge's hint form: the judge wrote the length hint but lost topic hints (right hint 90% →
  // 72–78%), and neither build's teacher read the length hint (docs/benchmarks.md "Recipes v9 and v10 tried")
  styleHint: 0, styleFeedback: 0, styleJudge: 0,
};

/** v8: the share of style conversations about length (the rest are about mood). */
export const LENGTH_SHARE = 0.6;
/**
 * v9: the share of style judge cases drawn as a complaint in the hint form, ending in the length (or mood) hint; the rest
 * are PRM cases as in v8b. v8 taught half its cases in the hint form, praise included (its "no hint" verdicts), and lost
 * the topic hints; complaints alone add only hints, and the hint rules' grounding keeps a length hint off a topic
 * correction.
 */
export const STYLE_HINT_FORM_SHARE = 0.25;
/**
 * v9: the most words of a short story in the style kinds. SHORT_WORDS (25) gave the teacher stories of 20–25 words, on
 * both sides of a "short" user's limit (20–26 words on the blind personas).
 */
export const STYLE_SHORT_WORDS = 20;

/** In an implicitJudge case: the share of corrections (the rest are preferences after a story that has the topic), and of
 * those the share that follow soft praise ("Nice, but …"). */
export const IMPLICIT_CASES = { correction: 0.7, soft: 0.25 };

/** Share of tool conversations answered directly, without the tool (the answer is then wrong). */
export const DIRECT_ANSWER_SHARE = 0.2;

/** How often each kind of judge case comes: topic correction, name correction, praise, praise naming the topic, an
 * unrelated reply, a tool result. Shares add up to 1. */
export type JudgeCaseShares = [correction: number, nameCorrection: number, praise: number, praiseTopic: number, neutral: number, tool: number];
/** What `bench chat-model` measures on (fixed since recipe v1, so versions compare). */
export const JUDGE_CASES_BENCH: JudgeCaseShares = [0.3, 0.1, 0.22, 0.08, 0.15, 0.15];
/** What the recipe trains on: more praise than the benchmark mix, since v3 learned to call unknown praise a correction. */
export const JUDGE_CASES_TRAIN: JudgeCaseShares = [0.22, 0.08, 0.3, 0.1, 0.15, 0.15];

/** A uniform draw under `shares`, moved to the same kind's interval under the benchmark's shares. */
export function remapShare(r: number, shares: JudgeCaseShares): number {
  let from = 0, to = 0, k = 0;
  // the last kind takes whatever is left (shares that add up to 1 only up to rounding)
  for (; k < shares.length - 1 && r >= from + shares[k]; k++) { from += shares[k]; to += JUDGE_CASES_BENCH[k]; }
  return shares[k] > 0 ? to + ((r - from) / shares[k]) * JUDGE_CASES_BENCH[k] : to;
}

export interface Arithmetic { a: number; b: number; op: '+' | '-' | '*'; expression: string; result: number }

export function randomArithmetic(rng: Rng): Arithmetic {
  const int = (lo: number, hi: number) => lo + Math.floor(rng.next() * (hi - lo + 1));
  const op = (['+', '-', '*'] as const)[int(0, 2)];
  let a = int(2, 99), b = op === '*' ? int(2, 12) : int(2, 99);
  if (op === '-' && b > a) [a, b] = [b, a];
  const result = op === '+' ? a + b : op === '-' ? a - b : a * b;
  return { a, b, op, expression: `${a} ${op} ${b}`, result };
}

/** A wrong answer near the right one (what a model that guesses tends to write). */
export function nearMiss(rng: Rng, result: number): number {
  const off = 1 + Math.floor(rng.next() * 9);
  return rng.next() < 0.5 && result - off >= 0 ? result - off : result + off;
}

/** The hint prompt's verdict as the judge is taught to write it: a hint between the markers, or \boxed{-1} for none. */
export function hintVerdict(hint: string | null): string {
  return hint ? `\\boxed{1}\n[HINT_START]${hint}[HINT_END]` : '\\boxed{-1}';
}

/** The assistant's answer as the judge loop writes it for the judge (content, then tool calls). */
export function judgeResponseText(content: string, toolCalls: { name: string; arguments: string }[] = []): string {
  return [content, ...toolCalls.map((c) => `[tool call] ${c.name}(${c.arguments})`)].filter(Boolean).join('\n');
}

export class ConversationGenerator {
  private readonly rng: Rng;
  private readonly sets: PhrasingSets;
  private readonly pool: StoryPool;
  private readonly split: 'train' | 'heldOut';
  /** the topics the pool has stories for (a small pool can miss one: its requests would have no answer) */
  private readonly topics: readonly string[];
  private callId = 0;

  constructor(pool: StoryPool, seed: number, split: 'train' | 'heldOut' = 'train', sets: PhrasingSets = phrasingSets()) {
    this.rng = new Rng(seed);
    this.pool = pool;
    this.split = split;
    this.sets = sets;
    this.topics = TOPICS.filter((t) => (pool.byTopic[t]?.length ?? 0) > 0);
  }

  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new Error('the recipe ran out of material to pick from (a pool or phrasing set is empty)');
    return xs[Math.floor(this.rng.next() * xs.length)];
  }
  chance(p: number): boolean { return this.rng.next() < p; }
  private phrase(set: keyof PhrasingSets): string { return this.pick(this.sets[set][this.split]); }

  topicStory(t: string): string { return this.pick(this.pool.byTopic[t]); }
  storyWithout(t: string): string {
    for (let i = 0; i < 50; i++) { const s = this.pick(this.pool.free); if (!mentionsTopic(s, t)) return s; }
    throw new Error(`no free story without '${t}'`);
  }
  storyWithoutName(n: string): string {
    for (let i = 0; i < 50; i++) { const s = this.pick(this.pool.free); if (!mentionsName(s, n)) return s; }
    throw new Error(`no free story without '${n}'`);
  }
  shortStory(maxWords = SHORT_WORDS): string {
    for (let i = 0; i < 50; i++) { const s = cutAtSentence(this.pick(this.pool.free), maxWords); if (s) return s; }
    throw new Error('no short story in the pool');
  }
  /** Free stories longer than a short one (v8: what a user who wants short stories complains about). */
  private get longStories(): string[] { return this.longCache ??= this.pool.free.filter((s) => !isShort(s)); }
  /** Free stories with a sad word in them (v8: what a user who wants happy stories complains about). */
  private get sadStories(): string[] { return this.sadCache ??= this.pool.free.filter((s) => !isHappy(s)); }
  private longCache?: string[];
  private sadCache?: string[];
  /** v8: whether a style conversation is about length (else mood); a pool without long or without sad stories decides */
  private aboutLength(): boolean {
    const length = this.chance(LENGTH_SHARE);
    if (this.longStories.length === 0 && this.sadStories.length === 0) throw new Error('the story pool has neither long nor sad stories');
    return this.sadStories.length === 0 ? true : this.longStories.length === 0 ? false : length;
  }
  happyStory(): string {
    for (let i = 0; i < 50; i++) { const s = this.pick(this.pool.free); if (isHappy(s)) return s; }
    throw new Error('no happy story in the pool');
  }

  private user(content: string): ChatMessage { return { role: 'user', content }; }
  private assistant(content: string): ChatMessage { return { role: 'assistant', content }; }

  request(kind: 'topic' | 'name' | 'topicName' | 'short' | 'happy' | 'plain'): { conversation: Conversation; topic?: string; name?: string } {
    let prompt: string, answer: string, topic: string | undefined, name: string | undefined;
    switch (kind) {
      case 'topic': topic = this.pick(this.topics); prompt = fill(this.phrase('topicRequests'), { t: topic }); answer = this.topicStory(topic); break;
      case 'name': name = this.pick(NAMES); prompt = fill(this.phrase('nameRequests'), { n: name }); answer = this.pick(this.pool.byName[name]); break;
      case 'topicName': {
        const s = this.pick(this.pool.byTopicName);
        topic = s.topic; name = s.name;
        prompt = fill(this.phrase('topicNameRequests'), { t: topic, n: name }); answer = s.text; break;
      }
      case 'short': prompt = this.phrase('shortRequests'); answer = this.shortStory(); break;
      case 'happy': prompt = this.phrase('happyRequests'); answer = this.happyStory(); break;
      case 'plain': prompt = this.phrase('plainRequests'); answer = this.pick(this.pool.free); break;
    }
    return { conversation: { kind, messages: [this.user(prompt), this.assistant(answer)], ...(topic ? { topic } : {}) }, topic, name };
  }

  /** A plain request with a hindsight hint (the OPD teacher's prompt), answered as the hint says. */
  hint(): Conversation {
    const plain = this.phrase('plainRequests');
    if (this.chance(0.8)) {
      const t = this.pick(this.topics);
      return { kind: 'hint', messages: [this.user(userTextWithHint(plain, fill(this.phrase('topicHints'), { t }))), this.assistant(this.topicStory(t))], topic: t };
    }
    const n = this.pick(NAMES);
    return { kind: 'hint', messages: [this.user(userTextWithHint(plain, fill(this.phrase('nameHints'), { n }))), this.assistant(this.pick(this.pool.byName[n]))] };
  }

  /** A correction after a story that missed, then a story that complies. */
  feedback(): Conversation {
    const plain = this.phrase('plainRequests');
    if (this.chance(0.8)) {
      const t = this.pick(this.topics);
      return { kind: 'feedback', messages: [this.user(plain), this.assistant(this.storyWithout(t)), this.user(fill(this.phrase('topicCorrections'), { t })), this.assistant(this.topicStory(t))], topic: t };
    }
    const n = this.pick(NAMES);
    return { kind: 'feedback', messages: [this.user(plain), this.assistant(this.storyWithoutName(n)), this.user(fill(this.phrase('nameCorrections'), { n })), this.assistant(this.pick(this.pool.byName[n]))] };
  }

  /** Praise, and another story. */
  praise(): Conversation {
    return { kind: 'praise', messages: [this.user(this.phrase('plainRequests')), this.assistant(this.pick(this.pool.free)), this.user(this.phrase('positive')), this.assistant(this.pick(this.pool.free))] };
  }

  /** A judge case: an answer, what came next, the true PRM score and the true hint (or null); `shares` sets how often each kind comes. */
  judgeCase(shares: JudgeCaseShares = JUDGE_CASES_BENCH): { input: JudgeInput; score: 1 | 0 | -1; hint: string | null; label: string } {
    // a draw under `shares`, mapped onto the benchmark's fixed thresholds below, kind by kind
    const r = remapShare(this.rng.next(), shares);
    const userState = (text: string) => ({ role: 'user' as const, text, looksLikeError: false });
    if (r < 0.3) {
      const t = this.pick(this.topics);
      return { input: { response: this.storyWithout(t), nextState: userState(fill(this.phrase('topicCorrections'), { t })) }, score: -1, hint: fill(JUDGE_HINT.topic, { t }), label: 'correction' };
    }
    if (r < 0.4) {
      const n = this.pick(NAMES);
      return { input: { response: this.storyWithoutName(n), nextState: userState(fill(this.phrase('nameCorrections'), { n })) }, score: -1, hint: fill(JUDGE_HINT.name, { n }), label: 'name correction' };
    }
    if (r < 0.62) return { input: { response: this.pick(this.pool.free), nextState: userState(this.phrase('positive')) }, score: 1, hint: null, label: 'praise' };
    if (r < 0.7) {
      const t = this.pick(this.topics);
      return { input: { response: this.topicStory(t), nextState: userState(fill(this.phrase('positiveTopic'), { t })) }, score: 1, hint: fill(JUDGE_HINT.likes, { t }), label: 'praise with topic' };
    }
    if (r < 0.85) return { input: { response: this.pick(this.pool.free), nextState: userState(this.phrase('neutral')) }, score: 0, hint: null, label: 'neutral' };
    // a tool call and the tool's result
    const q = randomArithmetic(this.rng);
    const args = JSON.stringify({ expression: q.expression });
    const failed = this.chance(0.4);
    const text = failed ? this.pick(TOOL_ERRORS) : String(q.result);
    return {
      input: { response: judgeResponseText('', [{ name: 'calculator', arguments: args }]), nextState: { role: 'tool', text, looksLikeError: looksLikeError(text) } },
      score: failed ? -1 : 1, hint: null, label: failed ? 'tool error' : 'tool result',
    };
  }

  prm(): Conversation {
    const c = this.judgeCase(JUDGE_CASES_TRAIN);
    return { kind: 'prm', messages: [...compactPrmPrompt(c.input), this.assistant(`\\boxed{${c.score}}`)] };
  }

  hintJudge(): Conversation {
    const c = this.judgeCase(JUDGE_CASES_TRAIN);
    return { kind: 'hintJudge', messages: [...compactHintPrompt(c.input), this.assistant(hintVerdict(c.hint))] };
  }

  /**
   * A judge case worded without a "no": a preference, a wish or an absence after a story without the topic (−1), sometimes
   * after soft praise, or a preference after a story that has it (+1, so the judge must read the story); PRM or hint form.
   * v5's judge gets about half of such held-out wordings right and reads "My daughter only likes stories with bears." as praise.
   * Added on top of v5's mix rather than in place of its corrections: trial builds that replaced corrections and widened praise
   * lost 10–23 points on the personas' own feedback (bench/judge-feedback.ts).
   */
  implicitJudge(): Conversation {
    const t = this.pick(this.topics);
    const userState = (text: string) => ({ role: 'user' as const, text, looksLikeError: false });
    const correction = this.chance(IMPLICIT_CASES.correction);
    const c = correction
      ? { input: { response: this.storyWithout(t), nextState: userState(fill(this.phrase(this.chance(IMPLICIT_CASES.soft) ? 'softCorrections' : 'implicitCorrections'), { t })) }, score: -1, hint: fill(JUDGE_HINT.topic, { t }) }
      : { input: { response: this.topicStory(t), nextState: userState(fill(this.phrase('preferences'), { t })) }, score: 1, hint: fill(JUDGE_HINT.likes, { t }) };
    if (this.chance(0.5)) return { kind: 'implicitJudge', messages: [...compactPrmPrompt(c.input), this.assistant(`\\boxed{${c.score}}`)] };
    return { kind: 'implicitJudge', messages: [...compactHintPrompt(c.input), this.assistant(hintVerdict(c.hint))] };
  }

  /** v8: a plain request with a hint about the story's length or mood, answered as the hint says. */
  styleHint(): Conversation {
    const plain = this.phrase('plainRequests');
    if (this.aboutLength()) return { kind: 'styleHint', messages: [this.user(userTextWithHint(plain, this.phrase('shortHints'))), this.assistant(this.shortStory(STYLE_SHORT_WORDS))] };
    return { kind: 'styleHint', messages: [this.user(userTextWithHint(plain, this.phrase('happyHints'))), this.assistant(this.happyStory())] };
  }

  /** v8: a complaint about a long or a sad story, then one that complies. */
  styleFeedback(): Conversation {
    const plain = this.phrase('plainRequests');
    const length = this.aboutLength();
    const before = this.pick(length ? this.longStories : this.sadStories);
    const complaint = this.phrase(length ? 'lengthComplaints' : 'moodComplaints');
    return { kind: 'styleFeedback', messages: [this.user(plain), this.assistant(before), this.user(complaint), this.assistant(length ? this.shortStory(STYLE_SHORT_WORDS) : this.happyStory())] };
  }

  /**
   * v8: a judge case about length or mood: a complaint after a long (or sad) story, −1 with the matching hint; praise of
   * its length (or mood) after a short (or happy) one, +1 with no hint. `alwaysComplaint` draws a complaint without the
   * coin (v9's hint-form cases).
   */
  styleCase(alwaysComplaint = false): { input: JudgeInput; score: 1 | -1; hint: string | null; label: string } {
    const userState = (text: string) => ({ role: 'user' as const, text, looksLikeError: false });
    const length = this.aboutLength(), complaint = alwaysComplaint || this.chance(0.5);
    if (complaint) {
      return { input: { response: this.pick(length ? this.longStories : this.sadStories), nextState: userState(this.phrase(length ? 'lengthComplaints' : 'moodComplaints')) }, score: -1, hint: length ? JUDGE_HINT.short : JUDGE_HINT.happy, label: length ? 'length complaint' : 'mood complaint' };
    }
    return { input: { response: length ? this.shortStory() : this.happyStory(), nextState: userState(this.phrase(length ? 'lengthPraise' : 'moodPraise')) }, score: 1, hint: null, label: length ? 'length praise' : 'mood praise' };
  }

  /**
   * v8b: style cases in the PRM form; v9: a share of them (STYLE_HINT_FORM_SHARE) a complaint in the hint form. A build
   * that taught half of all style cases in the hint form, praise with its "no hint" verdict included (v8), lost the hint
   * judge: it answered \boxed{-1} to 82% of the hint votes on plain topic corrections (v6: 15%), so nothing was left to
   * distil (docs/benchmarks.md "Recipe v8").
   */
  styleJudge(): Conversation {
    // no draw at share 0, so v8b's conversations are drawn as before
    if (STYLE_HINT_FORM_SHARE > 0 && this.chance(STYLE_HINT_FORM_SHARE)) {
      const c = this.styleCase(true);
      return { kind: 'styleJudge', messages: [...compactHintPrompt(c.input), this.assistant(hintVerdict(c.hint))] };
    }
    const c = this.styleCase();
    return { kind: 'styleJudge', messages: [...compactPrmPrompt(c.input), this.assistant(`\\boxed{${c.score}}`)] };
  }

  /** Arithmetic with the calculator offered: usually a tool call, its result and the answer; sometimes a direct, wrong answer. */
  tool(): Conversation {
    const q = randomArithmetic(this.rng);
    const question = fill(this.phrase('arithmetic'), { e: q.expression });
    const answer = (r: number) => fill(this.pick(['{e} = {r}.', 'The answer is {r}.', 'It is {r}.']), { e: q.expression, r: String(r) });
    if (this.chance(DIRECT_ANSWER_SHARE)) {
      return { kind: 'tool', tools: [CALCULATOR_TOOL], messages: [this.user(question), this.assistant(answer(nearMiss(this.rng, q.result)))] };
    }
    const id = `call_${++this.callId}`;
    return {
      kind: 'tool', tools: [CALCULATOR_TOOL], copies: [{ text: q.expression, at: 'first' }, { text: String(q.result), at: 'last' }],
      messages: [
        this.user(question),
        { role: 'assistant', content: '', tool_calls: [{ id, type: 'function', function: { name: 'calculator', arguments: JSON.stringify({ expression: q.expression }) } }] },
        { role: 'tool', tool_call_id: id, content: String(q.result) },
        this.assistant(answer(q.result)),
      ],
    };
  }

  /** Arithmetic with no tool offered: the right answer (which a model this small mostly cannot reproduce). */
  noTool(): Conversation {
    const q = randomArithmetic(this.rng);
    return { kind: 'noTool', messages: [this.user(fill(this.phrase('arithmetic'), { e: q.expression })), this.assistant(`${q.expression} = ${q.result}.`)] };
  }

  one(kind: Kind): Conversation {
    switch (kind) {
      case 'topic': case 'name': case 'topicName': case 'short': case 'happy': case 'plain': return this.request(kind).conversation;
      case 'hint': return this.hint();
      case 'feedback': return this.feedback();
      case 'praise': return this.praise();
      case 'prm': return this.prm();
      case 'hintJudge': return this.hintJudge();
      case 'tool': return this.tool();
      case 'noTool': return this.noTool();
      case 'implicitJudge': return this.implicitJudge();
      case 'styleHint': return this.styleHint();
      case 'styleFeedback': return this.styleFeedback();
      case 'styleJudge': return this.styleJudge();
    }
  }

  /** `mix[kind]` conversations of every kind, shuffled (deterministically). */
  conversations(mix: Mix): Conversation[] {
    const out: Conversation[] = [];
    for (const kind of KINDS) for (let i = 0; i < (mix[kind] ?? 0); i++) out.push(this.one(kind));
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.rng.next() * (i + 1));
      [out[i], out[j]] = [out[j], out[i]];
    }
    return out;
  }
}

/** A conversation as one line of OpenAI chat JSONL (what `openclaw-rl sft --data` reads). */
export function toJsonl(c: Conversation): string {
  return JSON.stringify(c.tools ? { messages: c.messages, tools: c.tools } : { messages: c.messages });
}
