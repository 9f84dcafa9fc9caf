// The repeat guard in the trainer, on stories260K: greedy answers to the same request are word-for-word retellings; the
// first telling keeps the judge's +1, every retelling within the window gets at most 0 (withhold) or −1 (punish), the
// trainer counts them, and a trainer started again on the same store remembers the window.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import type { RepeatGuard } from '../../src/learn/repeat-guard.ts';

const PROMPTS = ['Once upon a time', 'One day, a little girl'];

/** Sessions asking greedily (so the same request gets the same answer), each followed by praise. */
async function sessions(s: Awaited<ReturnType<typeof startTestServer>>, from: number, n: number): Promise<void> {
  for (let c = from; c < from + n; c++) {
    const h = { 'x-session-id': `r-${c}` }, prompt = PROMPTS[c % 2];
    const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 16, temperature: 0 }, h);
    assert.equal(first.status, 200);
    const answer = first.json.choices[0].message.content as string;
    const second = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: 'I love it, thanks!' }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
    assert.equal(second.status, 200);
  }
}

function firstTurns(s: Awaited<ReturnType<typeof startTestServer>>): { ids: string; score: number; reward: number; status: string }[] {
  return (s.store.sql(`SELECT t.response_ids, j.score, x.reward, x.status FROM samples x JOIN turns t ON t.id = x.turn_id JOIN judgements j ON j.turn_id = t.id WHERE t.idx = 0 ORDER BY t.id`).all() as { response_ids: string; score: number; reward: number; status: string }[])
    .map((r) => ({ ids: s.store.decodeIds(r.response_ids).join(','), score: r.score, reward: r.reward, status: r.status }));
}

for (const guard of ['withhold', 'punish', 'off'] as RepeatGuard[]) {
  test(`repeat guard ${guard}: the first telling keeps its +1, ${guard === 'off' ? 'and so do the retellings' : `each retelling gets ${guard === 'withhold' ? '0' : '−1'}`}`, { timeout: 120_000 }, async () => {
    const s = await startTestServer();
    try {
      const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 64, loopGuard: 'off', repeatGuard: guard, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints` });
      await trainer.init();
      await sessions(s, 0, 6);
      await new JudgeLoop(s.store, new LexicalJudge(), { hints: false }).tick();
      await trainer.buildSamples();
      const rows = firstTurns(s);
      assert.equal(rows.length, 6);
      assert.equal(new Set(rows.map((r) => r.ids)).size, 2, 'two requests, answered greedily: two distinct answers');
      const told = new Set<string>();
      for (const r of rows) {
        assert.equal(r.score, 1, 'the lexical judge approves every answer');
        const retelling = told.has(r.ids);
        told.add(r.ids);
        const want = !retelling || guard === 'off' ? 1 : guard === 'withhold' ? 0 : -1;
        assert.equal(r.reward, want);
        assert.equal(r.status, want === 0 ? 'none' : 'pending', 'a withheld retelling carries no signal for binary');
      }
      assert.equal(trainer.counts.repeats, guard === 'off' ? 0 : 4);
      assert.match(trainer.metrics(), new RegExp(`openclaw_rl_train_repeated_answers_total ${guard === 'off' ? 0 : 4}\\n`));
      assert.equal(trainer.status().repeatedAnswers, guard === 'off' ? 0 : 4);
    } finally {
      await s.close();
    }
  });
}

test('repeat guard: a trainer started again on the same store remembers the recent answers', { timeout: 120_000 }, async () => {
  const s = await startTestServer();
  try {
    const options = { method: 'binary' as const, batchSize: 64, loopGuard: 'off' as const, repeatGuard: 'withhold' as const, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints` };
    const before = new TrainerLoop(s.store, s.engine, options);
    await before.init();
    await sessions(s, 0, 2);
    await new JudgeLoop(s.store, new LexicalJudge(), { hints: false }).tick();
    await before.buildSamples();
    assert.deepEqual(firstTurns(s).map((r) => r.reward), [1, 1], 'two first tellings');
    const after = new TrainerLoop(s.store, s.engine, options);
    await after.init();
    await sessions(s, 2, 2);
    await new JudgeLoop(s.store, new LexicalJudge(), { hints: false }).tick();
    await after.buildSamples();
    assert.deepEqual(firstTurns(s).map((r) => r.reward), [1, 1, 0, 0], 'the same two answers after the restart are retellings');
    assert.equal(after.counts.repeats, 2);
  } finally {
    await s.close();
  }
});
