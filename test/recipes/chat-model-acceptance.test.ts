// stories260k-chat as built by `npm run make:chat-model` (CI builds it into the cache before the tests;
// elsewhere the test is skipped until it has been built): the quick version of `bench chat-model` on
// held-out phrasings. The floors are what the current recipe (v3) reaches, with room for the quick run's
// noise (measured on it: topic 58% vs base 29%, hint +3.4 / −0.7 nats, judge 71%, tool JSON 100%) — some
// are BELOW issue 11's acceptance numbers, which the build does not all meet (docs/benchmarks.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultChatModelDir, isCurrentBuild, readManifest } from '../../src/recipes/chat-model/build.ts';
import { benchChatModel } from '../../src/bench/chat-model.ts';
import { STORIES } from '../helpers/models.ts';

const dir = process.env.OPENCLAW_RL_CHAT_MODEL ?? defaultChatModelDir();
const built = isCurrentBuild(dir) && readManifest(dir)?.quick === false;

test('stories260k-chat on held-out phrasings (quick bench): parseable judge verdicts that agree more often than not, tool calls with valid JSON, hints that favour the answers they ask for',
  { skip: built ? false : `no full build of stories260k-chat at ${dir}: \`npm run make:chat-model\` builds it (CI does)` }, async () => {
    const r = await benchChatModel({ model: dir, base: STORIES, quick: true, seed: 11 });
    assert.ok(r.judge.prmSignAgreement >= 0.55, `self-judge sign agreement ${r.judge.prmSignAgreement}`);
    assert.ok(r.tools.withTool.callsMade >= r.tools.questions / 2, `tool calls ${r.tools.withTool.callsMade} for ${r.tools.questions} questions`);
    assert.ok(r.tools.withTool.jsonValidRate >= 0.7, `tool-call JSON valid ${r.tools.withTool.jsonValidRate}`);
    assert.ok(r.hint.satisfying.meanDeltaPerAnswer > 0.5, `a hint raises the answers that satisfy it: ${r.hint.satisfying.meanDeltaPerAnswer} nats`);
    assert.ok(r.hint.satisfying.meanDeltaPerAnswer > r.hint.violating.meanDeltaPerAnswer, `hint effect ${r.hint.satisfying.meanDeltaPerAnswer} vs ${r.hint.violating.meanDeltaPerAnswer}`);
    assert.ok(r.topic.chatRate >= r.topic.baseRate + 0.1, `topic following ${r.topic.chatRate} vs base ${r.topic.baseRate}`);
  });
