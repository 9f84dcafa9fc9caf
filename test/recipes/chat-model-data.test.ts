// The chat-model recipe's data: phrasing splits, the generators' determinism, answers that satisfy
// their requests, judge verdicts that parse, tool calls that are valid JSON, held-out phrasings that
// never reach the training data, and conversations that render within the model's 512 tokens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { combine, phrasingSets, fill, plural, TOPICS, HELD_OUT_TOPICS, NAMES } from '../../src/recipes/chat-model/phrasings.ts';
import { ConversationGenerator, FULL_MIX, KINDS, toJsonl, STYLE_HINT_FORM_SHARE, STYLE_SHORT_WORDS, type Mix } from '../../src/recipes/chat-model/data.ts';
import { cutAtSentence, mentionsTopic, mentionsName, isShort, isHappy, words, type StoryPool } from '../../src/recipes/chat-model/stories.ts';
import { addChatVocabulary } from '../../src/recipes/chat-model/vocab.ts';
import { ChatTokenizer } from '../../src/engine/embedded/tokenizer.ts';
import { encodeChatExample } from '../../src/trainer/sft.ts';
import { firstMention, findInLoss, weighTopic, weighCopies } from '../../src/recipes/chat-model/train.ts';
import { CALCULATOR_TOOL } from '../../src/recipes/chat-model/data.ts';
import { parseBoxed, parseHintVote } from '../../src/learn/votes.ts';
import { HINT_MARKER } from '../../src/learn/hint-prompt.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

/** A small pool of hand-written stories in the base model's style (the generators only pick from it). */
function handPool(): StoryPool {
  const free = ['Once upon a time, there was a little girl. She liked to play in the sun. She was very happy.',
    'One day, a boy went to the park. He saw a big red slide. He had fun all day.',
    'Tim had a toy. He played with it every day. The toy was his best friend.',
    'The sun was hot. A girl sat under a hat and smiled. Then she went home to eat.',
    'Lily lost her shoe. She was sad and cried. Her mom found it under the bed.',
    'Once upon a time, there was a big dog named Max. He liked to run in the park with his friend Sue. One day they found a ball and played with it until the sun went down.'];
  return {
    free,
    byTopic: Object.fromEntries(TOPICS.map((t) => [t, [`Once upon a time, there was a ${t}. The ${t} liked to play. It was a good day.`]])),
    byName: Object.fromEntries(NAMES.map((n) => [n, [`There was a kid named ${n}. ${n} liked to run and jump. ${n} was happy.`]])),
    byTopicName: [{ topic: 'dog', name: 'Max', text: 'Once upon a time, there was a dog named Max. Max liked to run.' }],
    stats: { samples: 0, tokens: 0, seconds: 0, rejectedNoSentence: 0, freeWithTopic: {} },
  };
}

const SMALL_MIX: Mix = Object.fromEntries(KINDS.map((k) => [k, 40])) as Mix;

test('combine: a phrasing is held out when any of its parts is, and the two sets never share a phrasing', () => {
  const out = combine([{ train: ['A', 'B'], heldOut: ['C'] }, { train: ['x'], heldOut: ['y'] }], (p) => p.join(''));
  assert.deepEqual(out.train.sort(), ['Ax', 'Bx']);
  assert.deepEqual(out.heldOut.sort(), ['Ay', 'By', 'Cx', 'Cy']);
  for (const [name, set] of Object.entries(phrasingSets())) {
    assert.ok(set.train.length > 0 && set.heldOut.length > 0, `${name} has both training and held-out phrasings`);
    for (const h of set.heldOut) assert.ok(!set.train.includes(h), `${name}: "${h}" is in both sets`);
  }
});

test('cutAtSentence keeps whole sentences within the word limit and drops unbalanced quotes', () => {
  const table: [string, number, string | null][] = [
    ['One day, a dog ran. It was fast. Then it slept', 100, 'One day, a dog ran. It was fast.'],
    ['One day, a dog ran. It was very fast indeed.', 5, 'One day, a dog ran.'],
    ['A dog ran and ran and ran', 100, null],
    ['Tom said, "Hi there!" Then he left.', 100, 'Tom said, "Hi there!" Then he left.'],
    ['The big dog sat down. Tom said, "Hi. Then', 100, 'The big dog sat down.'],
    ['Hi. Yo.', 100, null],
  ];
  for (const [text, max, expected] of table) assert.equal(cutAtSentence(text, max), expected, text);
});

test('the same seed gives the same conversations and another seed different ones', () => {
  const a = new ConversationGenerator(handPool(), 7).conversations(SMALL_MIX).map(toJsonl);
  const b = new ConversationGenerator(handPool(), 7).conversations(SMALL_MIX).map(toJsonl);
  const c = new ConversationGenerator(handPool(), 8).conversations(SMALL_MIX).map(toJsonl);
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
  assert.equal(a.length, 40 * KINDS.length);
});

test('held-out phrasings never appear in the training conversations', () => {
  const sets = phrasingSets();
  const heldOut = new Set<string>();
  for (const set of Object.values(sets)) {
    for (const h of set.heldOut) {
      if (!/\{[tnep]\}/.test(h)) { heldOut.add(h); continue; }
      for (const t of TOPICS) for (const n of NAMES) heldOut.add(fill(h, { t, n }));
    }
  }
  const userTexts: string[] = [];
  for (const c of new ConversationGenerator(handPool(), 1).conversations({ ...FULL_MIX })) {
    for (const m of c.messages) {
      if (m.role !== 'user' || typeof m.content !== 'string') continue;
      // a hint prompt holds two phrasings (the request, the hint); a judge prompt quotes the next state
      const parts = m.content.split(`\n\n${HINT_MARKER}\n`);
      const next = m.content.match(/\nNext \(user\): (.*)$/);
      userTexts.push(...(next ? [next[1]] : parts));
    }
  }
  assert.ok(userTexts.length > 5000);
  const arithmetic = sets.arithmetic.heldOut.map((h) => new RegExp(`^${h.replace(/[.?]/g, '\\$&').replace('{e}', '\\d+ [-+*] \\d+')}$`));
  for (const text of userTexts) {
    assert.ok(!heldOut.has(text), `held-out phrasing in the training data: "${text}"`);
    assert.ok(!arithmetic.some((r) => r.test(text)), `held-out arithmetic phrasing in the training data: "${text}"`);
  }
});

test('answers satisfy their requests, judge verdicts parse to the right score, tool calls are valid JSON with the right result', () => {
  const gen = new ConversationGenerator(handPool(), 3);
  for (let i = 0; i < 200; i++) {
    const r = gen.request('topic');
    assert.ok(mentionsTopic(r.conversation.messages[1].content as string, r.topic!));
    const n = gen.request('name');
    assert.ok(mentionsName(n.conversation.messages[1].content as string, n.name!));
    assert.ok(isShort(gen.request('short').conversation.messages[1].content as string));
    assert.ok(isHappy(gen.request('happy').conversation.messages[1].content as string));

    const hint = gen.hint();
    const hintText = (hint.messages[0].content as string).split(`${HINT_MARKER}\n`)[1];
    const topic = TOPICS.find((t) => new RegExp(`\\b${t}\\b`).test(hintText));
    const name = NAMES.find((x) => new RegExp(`\\b${x}\\b`).test(hintText));
    assert.ok(topic || name, hintText);
    const answer = hint.messages[1].content as string;
    assert.ok(topic ? mentionsTopic(answer, topic) : mentionsName(answer, name!));

    const fb = gen.feedback();
    assert.equal(fb.messages.length, 4);

    const c = gen.judgeCase();
    const prm = gen.prm(), hj = gen.hintJudge();
    assert.notEqual(parseBoxed(prm.messages.at(-1)!.content as string), null);
    const vote = parseHintVote(hj.messages.at(-1)!.content as string);
    assert.ok(vote.score === 1 ? (vote.hint?.length ?? 0) > 10 : vote.score === -1 && vote.hint === null);
    assert.ok(c.hint === null || c.hint.length > 10);

    const tool = gen.tool();
    const call = tool.messages[1].tool_calls?.[0];
    const question = tool.messages[0].content as string;
    const [, a, op, b] = question.match(/(\d+) ([-+*]) (\d+)/)!;
    const expected = op === '+' ? +a + +b : op === '-' ? +a - +b : +a * +b;
    if (call) {
      const args = JSON.parse(call.function.arguments as string);
      assert.equal(args.expression, `${a} ${op} ${b}`);
      assert.equal(tool.messages[2].content, String(expected));
      assert.ok((tool.messages[3].content as string).includes(String(expected)));
    } else {
      assert.ok(!(tool.messages[1].content as string).match(new RegExp(`\\b${expected}\\.$`)), 'a direct answer is wrong on purpose');
    }
  }
});

test('every conversation renders through the chat template within the 512-token context', () => {
  const { dir, cleanup } = tempDir();
  try {
    addChatVocabulary(STORIES, join(dir, 'chat'), 1);
    const tok = ChatTokenizer.load(join(dir, 'chat'));
    let longest = 0;
    for (const c of new ConversationGenerator(handPool(), 5).conversations(SMALL_MIX)) {
      const ids = tok.encodeChat(c.messages, { tools: c.tools, addGenerationPrompt: false });
      longest = Math.max(longest, ids.length);
    }
    assert.ok(longest < 512, `longest conversation ${longest} tokens`);
  } finally { cleanup(); }
});

test('judge-case shares: the benchmark mix is drawn unchanged, the training mix moves draws kind by kind', async () => {
  const { remapShare, JUDGE_CASES_BENCH, JUDGE_CASES_TRAIN } = await import('../../src/recipes/chat-model/data.ts');
  for (const r of [0, 0.1, 0.299, 0.3, 0.45, 0.62, 0.7, 0.849, 0.85, 0.999]) assert.ok(Math.abs(remapShare(r, JUDGE_CASES_BENCH) - r) < 1e-12, `identity at ${r}`);
  const bounds = (s: number[]) => s.map((_, k) => s.slice(0, k + 1).reduce((a, b) => a + b, 0));
  const bench = bounds(JUDGE_CASES_BENCH), train = bounds(JUDGE_CASES_TRAIN);
  const kindOf = (x: number, b: number[]) => b.findIndex((hi) => x < hi);
  // table: draws just inside each training interval land in the same kind's benchmark interval
  for (let k = 0; k < train.length; k++) {
    const lo = k === 0 ? 0 : train[k - 1];
    for (const r of [lo + 1e-9, (lo + train[k]) / 2, train[k] - 1e-9]) assert.equal(kindOf(remapShare(r, JUDGE_CASES_TRAIN), bench), k, `draw ${r} of kind ${k}`);
  }
  assert.ok(Math.abs(train[train.length - 1] - 1) < 1e-9 && Math.abs(bench[bench.length - 1] - 1) < 1e-9, 'shares add up to 1');
});

test('the praise and unrelated-reply combinations only add training phrasings: held-out sets are those v3 was measured on', () => {
  const s = phrasingSets();
  assert.equal(s.positiveTopic.heldOut.join('|'), 'The {t} made my day, thanks!');
  assert.equal(s.neutral.heldOut.join('|'), 'Hold on.|Where are my keys?');
  for (const p of ['Beautiful, thank you so much!', 'My daughter adored it.', 'Just right, thanks.']) assert.ok(s.positive.heldOut.includes(p), p);
  assert.ok(s.positive.train.length > 1000 && s.neutral.train.length > 30, 'training sets grew');
  // the held-out wordings' own words never reach training (a phrasing is not "unseen" if its key word was trained)
  for (const word of ['beautiful', 'adored', 'just right', 'made my day', 'hold on', 'keys']) {
    for (const set of [s.positive.train, s.positiveTopic.train, s.neutral.train]) assert.ok(!set.some((x) => x.toLowerCase().includes(word)), word);
  }
});

test('the extra request wordings only add training phrasings: held-out requests are made from the original parts alone', () => {
  const s = phrasingSets();
  for (const set of [s.topicRequests, s.nameRequests, s.topicNameRequests]) {
    assert.ok(set.train.length > 500);
    for (const p of set.heldOut) assert.ok(!set.train.includes(p), p);
  }
  assert.equal(s.topicRequests.heldOut.length, 310, 'the topic requests the benchmark samples are those of recipe v3');
  for (const word of ['starring', 'all about', 'in which', 'plays', 'would like', 'tale', 'can i have', '?']) {
    assert.ok(!s.topicRequests.train.some((x) => x.toLowerCase().includes(word)), word);
  }
});

test('firstMention: the earliest loss-masked run of a spelling that is a whole word, longer spellings first at a start', () => {
  const whole = () => true;
  const table: [ids: number[], mask: number[], spellings: number[][], isWhole: (s: number, e: number) => boolean, expected: { start: number; end: number } | null][] = [
    [[1, 5, 6, 2, 5, 6], [0, 0, 0, 1, 1, 1], [[5, 6]], whole, { start: 4, end: 6 }], // the prompt's mention has no loss
    [[5, 6, 7], [1, 1, 1], [[5, 6], [5, 6, 7]], whole, { start: 0, end: 3 }], // the plural wins where both match
    [[5, 6, 9, 5, 6], [1, 1, 1, 1, 1], [[5, 6]], (s) => s > 0, { start: 3, end: 5 }], // the first is part of a longer word
    [[5, 6], [1, 0], [[5, 6]], whole, null], // half of it outside the loss
    [[4, 4], [1, 1], [[5]], whole, null],
  ];
  for (const [ids, mask, spellings, isWhole, expected] of table) assert.deepEqual(firstMention(ids, mask, spellings, isWhole), expected, JSON.stringify([ids, mask, spellings]));
});

test('weighTopic weighs the tokens of the answer\'s first mention of the topic (singular or plural), nothing in the prompt, not a longer word', (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  addChatVocabulary(STORIES, join(dir, 'm'), 1);
  const tok = ChatTokenizer.load(join(dir, 'm'));
  const weighted = (topic: string, answer: string) => {
    const ex = encodeChatExample(tok, { messages: [{ role: 'user', content: `A story about a ${topic}.` }, { role: 'assistant', content: answer }] });
    const w = weighTopic(tok, ex, topic, 5);
    assert.deepEqual(w.ids, ex.ids);
    return tok.decode(w.ids.filter((_, i) => w.mask[i] === 5)).trim();
  };
  assert.equal(weighted('ball', 'Tom had a balloon. Then a big ball came. The ball was red.'), 'ball');
  assert.equal(weighted('bunny', 'Tom saw two bunnies and a bunny.'), 'bunnies');
  assert.equal(weighted('dog', 'A cat sat.'), '');
});

test('findInLoss: the first or last run of a token sequence among loss tokens', () => {
  const table: [ids: number[], mask: number[], sp: number[], at: 'first' | 'last', expected: { start: number; end: number } | null][] = [
    [[3, 4, 9, 3, 4, 9, 3, 4], [0, 0, 0, 1, 1, 1, 1, 1], [3, 4], 'first', { start: 3, end: 5 }],
    [[3, 4, 9, 3, 4, 9, 3, 4], [0, 0, 0, 1, 1, 1, 1, 1], [3, 4], 'last', { start: 6, end: 8 }],
    [[3, 4], [0, 1], [3, 4], 'first', null],
    [[3, 4], [1, 1], [], 'first', null],
  ];
  for (const [ids, mask, sp, at, expected] of table) assert.deepEqual(findInLoss(ids, mask, sp, at), expected, JSON.stringify([ids, mask, sp, at]));
});

test('weighCopies weighs the calculator call\'s expression and the result in the final answer, not the question or the tool\'s message', (t) => {
  const { dir, cleanup } = tempDir();
  t.after(cleanup);
  addChatVocabulary(STORIES, join(dir, 'm'), 1);
  const tok = ChatTokenizer.load(join(dir, 'm'));
  const ex = encodeChatExample(tok, { tools: [CALCULATOR_TOOL], messages: [{ role: 'user', content: 'What is 37 + 45?' },
    { role: 'assistant', content: '', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'calculator', arguments: JSON.stringify({ expression: '37 + 45' }) } }] },
    { role: 'tool', tool_call_id: 'c1', content: '82' }, { role: 'assistant', content: 'The answer is 82.' }] });
  const w = weighCopies(tok, ex, [{ text: '37 + 45', at: 'first' }, { text: '82', at: 'last' }], 5);
  const heavy = w.ids.map((id, i) => (w.mask[i] === 5 ? i : -1)).filter((i) => i >= 0);
  assert.equal(tok.decode(heavy.map((i) => w.ids[i])).replace(/\s+/g, ''), '37+4582');
  for (const i of heavy) assert.ok(ex.mask[i] === 1, 'only tokens that already had a loss are weighed');
});

test('implicit judge cases: a correction without a "no" follows a story without the topic (−1), a preference one with it (+1); hints name the topic', () => {
  const gen = new ConversationGenerator(handPool(), 5);
  const sets = phrasingSets();
  const seen = { prm: 0, hint: 0, corrections: 0, preferences: 0 };
  for (let i = 0; i < 300; i++) {
    const c = gen.implicitJudge();
    const prompt = c.messages.at(-2)!.content as string, verdict = c.messages.at(-1)!.content as string;
    const [story, feedback] = prompt.replace(/^Answer: /, '').split('\nNext (user): ');
    const topic = TOPICS.find((t) => mentionsTopic(feedback, t))!;
    assert.ok(topic, feedback);
    const storyHasTopic = mentionsTopic(story, topic);
    const isPreference = sets.preferences.train.some((p) => fill(p, { t: topic }) === feedback);
    if (isPreference && storyHasTopic) seen.preferences++; else seen.corrections++;
    if (verdict.includes('[HINT_START]')) {
      seen.hint++;
      const vote = parseHintVote(verdict);
      assert.equal(vote.score, 1);
      assert.ok(vote.hint && mentionsTopic(vote.hint, topic), verdict);
    } else {
      seen.prm++;
      assert.equal(parseBoxed(verdict), storyHasTopic ? 1 : -1, `${feedback} → ${verdict}`);
    }
    // only training wordings: the held-out implicit corrections stay unseen
    for (const h of [...sets.implicitCorrections.heldOut, ...sets.softCorrections.heldOut]) assert.notEqual(feedback, fill(h, { t: topic }));
  }
  assert.ok(seen.prm > 100 && seen.hint > 100 && seen.corrections > 150 && seen.preferences > 50, JSON.stringify(seen));
});

test('topic nouns: plurals and the article before a vowel, as the templates fill them', () => {
  const plurals: [string, string][] = [['dog', 'dogs'], ['bunny', 'bunnies'], ['key', 'keys'], ['box', 'boxes'], ['princess', 'princesses'],
    ['fish', 'fish'], ['leaf', 'leaves'], ['mouse', 'mice'], ['wolf', 'wolves'], ['butterfly', 'butterflies']];
  for (const [t, p] of plurals) assert.equal(plural(t), p, t);
  const fills: [string, string, string][] = [
    ['Tell me a story about a {t}.', 'apple', 'Tell me a story about an apple.'],
    ['A {t} and some {p}.', 'owl', 'An owl and some owls.'],
    ['Tell me a story about a {t}.', 'dog', 'Tell me a story about a dog.'],
    ['I had a dream about {p}.', 'egg', 'I had a dream about eggs.'],
  ];
  for (const [template, t, out] of fills) assert.equal(fill(template, { t }), out);
  // every taught noun is taught once, and none of the nouns the benchmark holds out is among them
  assert.equal(new Set(TOPICS).size, TOPICS.length);
  for (const t of HELD_OUT_TOPICS) assert.ok(!(TOPICS as readonly string[]).includes(t), t);
});

test('style cases (v8): a complaint follows a long or a sad story (−1, the matching hint), praise a short or a happy one (+1, no hint); style hints and corrections are answered as they ask', async () => {
  const { JUDGE_HINT } = await import('../../src/recipes/chat-model/phrasings.ts');
  const gen = new ConversationGenerator(handPool(), 5);
  const sets = phrasingSets();
  const seen = { lengthComplaint: 0, moodComplaint: 0, lengthPraise: 0, moodPraise: 0 };
  for (let i = 0; i < 400; i++) {
    const c = gen.styleCase();
    const story = c.input.response, reply = c.input.nextState.text;
    if (c.score === -1) {
      if (c.hint === JUDGE_HINT.short) { assert.ok(!isShort(story) && sets.lengthComplaints.train.includes(reply), reply); seen.lengthComplaint++; }
      else { assert.equal(c.hint, JUDGE_HINT.happy); assert.ok(!isHappy(story) && sets.moodComplaints.train.includes(reply), reply); seen.moodComplaint++; }
    } else {
      assert.equal(c.hint, null);
      if (sets.lengthPraise.train.includes(reply)) { assert.ok(isShort(story)); seen.lengthPraise++; }
      else { assert.ok(isHappy(story) && sets.moodPraise.train.includes(reply), reply); seen.moodPraise++; }
    }
    const hint = gen.styleHint();
    const hintText = (hint.messages[0].content as string).split(`${HINT_MARKER}\n`)[1];
    const answer = hint.messages[1].content as string;
    if (sets.shortHints.train.includes(hintText)) assert.ok(words(answer).length <= STYLE_SHORT_WORDS, answer);
    else { assert.ok(sets.happyHints.train.includes(hintText), hintText); assert.ok(isHappy(answer)); }
    const fb = gen.styleFeedback();
    assert.equal(fb.messages.length, 4);
    const [before, complaint, after] = [fb.messages[1].content, fb.messages[2].content, fb.messages[3].content] as string[];
    if (sets.lengthComplaints.train.includes(complaint)) assert.ok(!isShort(before) && words(after).length <= STYLE_SHORT_WORDS);
    else { assert.ok(sets.moodComplaints.train.includes(complaint), complaint); assert.ok(!isHappy(before) && isHappy(after)); }
  }
  for (const [k, n] of Object.entries(seen)) assert.ok(n > 40, `${k}: ${n}`);
  // v9: a share of the judge cases is a complaint in the hint form, ending in the length or mood hint; the rest are PRM cases
  let hintForm = 0;
  for (let i = 0; i < 400; i++) {
    const j = gen.styleJudge();
    const verdict = j.messages.at(-1)!.content as string;
    assert.notEqual(parseBoxed(verdict), null);
    const hint = verdict.match(/\[HINT_START\](.*)\[HINT_END\]/)?.[1];
    if (hint !== undefined) { hintForm++; assert.ok(verdict.startsWith('\\boxed{1}') && [JUDGE_HINT.short, JUDGE_HINT.happy].includes(hint), verdict); }
    else assert.ok(['\\boxed{1}', '\\boxed{-1}'].includes(verdict), verdict);
  }
  assert.ok(Math.abs(hintForm / 400 - STYLE_HINT_FORM_SHARE) < 0.07, `hint form ${hintForm} of 400`);
});
