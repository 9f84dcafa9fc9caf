// stories260k-chat as built by `npm run make:chat-model` (CI builds it into the cache before the tests;
// elsewhere the test is skipped until it has been built): the quick version of `bench chat-model` on
// held-out phrasings, with floors a little under the full benchmark's acceptance numbers, because the
// quick run samples fewer cases.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultChatModelDir, isCurrentBuild, readManifest } from '../../src/recipes/chat-model/build.ts';
import { benchChatModel } from '../../src/bench/chat-model.ts';
import { STORIES } from '../helpers/models.ts';

const dir = process.env.OPENCLAW_RL_CHAT_MODEL ?? defaultChatModelDir();
const built = isCurrentBuild(dir) && readManifest(dir)?.quick === false;

test('stories260k-chat follows held-out requests, reads hints, judges, and calls the calculator (quick bench)',
  { skip: built ? false : `no full build of stories260k-chat at ${dir}: \`npm run make:chat-model\` builds it (CI does)` }, async () => {
    const r = await benchChatModel({ model: dir, base: STORIES, quick: true, seed: 11 });
    assert.ok(r.topic.chatRate >= 0.6, `topic following ${r.topic.chatRate} (base ${r.topic.baseRate})`);
    assert.ok(r.topic.chatRate > r.topic.baseRate + 0.3, `topic following ${r.topic.chatRate} vs base ${r.topic.baseRate}`);
    assert.ok(r.hint.satisfying.meanDeltaPerAnswer >= 0.5, `hint effect ${r.hint.satisfying.meanDeltaPerAnswer} nats per satisfying answer`);
    assert.ok(r.hint.satisfying.meanDeltaPerAnswer > r.hint.violating.meanDeltaPerAnswer, 'a hint helps answers that follow it more than answers that do not');
    assert.ok(r.judge.prmSignAgreement >= 0.7, `self-judge sign agreement ${r.judge.prmSignAgreement}`);
    assert.ok(r.tools.withTool.callsMade > 0 && r.tools.withTool.jsonValidRate >= 0.8, `tool calls ${r.tools.withTool.callsMade}, valid ${r.tools.withTool.jsonValidRate}`);
    assert.ok(r.tools.withTool.accuracy > r.tools.withoutTool.accuracy, `accuracy with the tool ${r.tools.withTool.accuracy}, without ${r.tools.withoutTool.accuracy}`);
  });
