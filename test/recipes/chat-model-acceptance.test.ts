// stories260k-chat as built by `npm run make:chat-model` (CI builds it into the cache before the tests;
// elsewhere the test is skipped until it has been built): the quick version of `bench chat-model` on
// held-out phrasings. The floors are what the current recipe (v6) reaches, with room for the quick run's
// noise (48 topic requests: ±7 points) and for builds whose weights differ (the WebAssembly kernels' arithmetic
// differs from the native one's).
// Measured on v6 (seeds 11/12/13): topic 69/83/77% of 48 requests vs base 23/19/33%, hint +4.0/+1.9/+5.6 nats per
// satisfying answer, judge 88/79/92%, tool JSON 100/92/100%, accuracy with the tool 75/92/75% vs 0% without.
// (v5: topic 94/88/96%, hint +5.7/+5.4/+4.1, judge 88/79/88%, JSON 100/92/100%, accuracy 58/67/58%.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultChatModelDir, isCurrentBuild, readManifest } from '../../src/recipes/chat-model/build.ts';
import { benchChatModel } from '../../src/bench/chat-model.ts';
import { STORIES } from '../helpers/models.ts';

const dir = process.env.OPENCLAW_RL_CHAT_MODEL ?? defaultChatModelDir();
const built = isCurrentBuild(dir) && readManifest(dir)?.quick === false;

test('stories260k-chat on held-out phrasings (quick bench): the requested topic, a judge that reads the next state, tool calls with valid JSON and the question\'s numbers, hints that favour the answers they ask for',
  { skip: built ? false : `no full build of stories260k-chat at ${dir}: \`npm run make:chat-model\` builds it (CI does)` }, async () => {
    const r = await benchChatModel({ model: dir, base: STORIES, quick: true, seed: 11 });
    assert.ok(r.judge.prmSignAgreement >= 0.7, `self-judge sign agreement ${r.judge.prmSignAgreement}`);
    assert.ok(r.tools.withTool.callsMade >= r.tools.questions / 2, `tool calls ${r.tools.withTool.callsMade} for ${r.tools.questions} questions`);
    assert.ok(r.tools.withTool.jsonValidRate >= 0.9, `tool-call JSON valid ${r.tools.withTool.jsonValidRate}`);
    assert.ok(r.tools.withTool.accuracy >= r.tools.withoutTool.accuracy + 0.25, `accuracy ${r.tools.withTool.accuracy} with the tool vs ${r.tools.withoutTool.accuracy} without`);
    assert.ok(r.hint.satisfying.meanDeltaPerAnswer > 1, `a hint raises the answers that satisfy it: ${r.hint.satisfying.meanDeltaPerAnswer} nats`);
    assert.ok(r.hint.satisfying.meanDeltaPerAnswer > r.hint.violating.meanDeltaPerAnswer, `hint effect ${r.hint.satisfying.meanDeltaPerAnswer} vs ${r.hint.violating.meanDeltaPerAnswer}`);
    // issue 11's target is 70% on the full bench's 384 requests (v6 reaches 74.5-77.6% there, v5 84-88%); the quick
    // bench's 48 carry ±7 points of sampling error
    assert.ok(r.topic.chatRate >= 0.6, `topic following ${r.topic.chatRate}`);
    assert.ok(r.topic.chatRate >= r.topic.baseRate + 0.35, `topic following ${r.topic.chatRate} vs base ${r.topic.baseRate}`);
  });
