// stories260k-chat as built by `npm run make:chat-model` (CI builds it into the cache before the tests;
// elsewhere the test is skipped until it has been built): the quick version of `bench chat-model` on
// held-out phrasings. The floors are what the current recipe reaches, with room for the quick run's
// noise — BELOW issue 11's acceptance numbers, which the current build does not meet (docs/benchmarks.md):
// this guards the formats (parseable verdicts, tool calls) and the direction of the hint effect.
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
    assert.ok(r.judge.prmSignAgreement >= 0.5, `self-judge sign agreement ${r.judge.prmSignAgreement}`);
    assert.ok(r.tools.withTool.callsMade >= r.tools.questions / 2, `tool calls ${r.tools.withTool.callsMade} for ${r.tools.questions} questions`);
    assert.ok(r.tools.withTool.jsonValidRate >= 0.2, `tool-call JSON valid ${r.tools.withTool.jsonValidRate}`);
    assert.ok(r.hint.satisfying.meanDeltaPerAnswer > r.hint.violating.meanDeltaPerAnswer, `hint effect ${r.hint.satisfying.meanDeltaPerAnswer} vs ${r.hint.violating.meanDeltaPerAnswer}`);
    assert.ok(r.topic.chatRate >= r.topic.baseRate - 0.1, `topic following ${r.topic.chatRate} vs base ${r.topic.baseRate}`);
  });
