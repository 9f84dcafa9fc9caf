// The loop guard in the trainer, on stories260K: every judged answer's sample carries the judge's reward after the
// guard (learn/loops.ts) — a looping answer the user approved is not reinforced — a looping answer is not distilled
// either, the trainer counts the answers it guarded, and with --loop-unlikelihood the repeats past the limit carry the
// unlikelihood term into the step.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import { guardedReward, loops, loopExcess, type LoopGuard } from '../../src/learn/loops.ts';
import type { Datum } from '../../src/engine/types.ts';

const PROMPTS = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily'];

/** Eight sessions: greedy 64-token stories (they loop) and short sampled ones (they do not), each followed by the feedback. */
async function sessions(s: Awaited<ReturnType<typeof startTestServer>>, feedback: string): Promise<void> {
  for (let c = 0; c < 8; c++) {
    const h = { 'x-session-id': `c-${c}` }, prompt = PROMPTS[c % 4];
    const params = c < 4 ? { max_tokens: 64, temperature: 0 } : { max_tokens: 12, temperature: 1, seed: c };
    const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], ...params }, h);
    assert.equal(first.status, 200);
    const answer = first.json.choices[0].message.content as string;
    const second = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
    assert.equal(second.status, 200);
  }
}

for (const guard of ['punish', 'withhold'] as LoopGuard[]) {
  test(`loop guard ${guard}: approved answers that loop lose their reward, the rest keep it`, { timeout: 120_000 }, async () => {
    const s = await startTestServer();
    try {
      const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 64, loopGuard: guard, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints` });
      await trainer.init();
      await sessions(s, 'I love it, thanks!');
      await new JudgeLoop(s.store, new LexicalJudge(), { hints: false }).tick();
      await trainer.buildSamples();
      const rows = s.store.sql(`SELECT t.response_ids, j.score, x.reward, x.status FROM samples x JOIN turns t ON t.id = x.turn_id JOIN judgements j ON j.turn_id = t.id WHERE t.idx = 0 ORDER BY t.id`).all() as { response_ids: string; score: number; reward: number; status: string }[];
      assert.equal(rows.length, 8);
      let looping = 0;
      for (const r of rows) {
        const ids = s.store.decodeIds(r.response_ids);
        const isLoop = loops(ids, s.engine.tokenizer.decode(ids, true));
        assert.equal(r.score, 1, 'the lexical judge approves every answer');
        assert.equal(r.reward, guardedReward(r.score, isLoop, guard));
        assert.equal(r.status, isLoop && guard === 'withhold' ? 'none' : 'pending', 'a withheld answer carries no signal for binary');
        if (isLoop) looping++;
      }
      assert.ok(looping > 0 && looping < 8, `some answers loop and some do not (${looping} of 8)`);
      assert.equal(trainer.counts.looping, looping);
      assert.match(trainer.metrics(), new RegExp(`openclaw_rl_train_looping_answers_total ${looping}\\n`));
    } finally {
      await s.close();
    }
  });
}

test('loop guard: a looping answer with a hint is not distilled; the others are', { timeout: 120_000 }, async () => {
  const s = await startTestServer();
  try {
    const trainer = new TrainerLoop(s.store, s.engine, { method: 'combine', opdMode: 'token', batchSize: 64, loopGuard: 'withhold', lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints` });
    await trainer.init();
    await sessions(s, 'No, I wanted a story about a dog.');
    await new JudgeLoop(s.store, new LexicalJudge(), { hints: true }).tick();
    await trainer.buildSamples();
    const rows = s.store.sql(`SELECT t.response_ids, j.score, j.hint, x.reward, x.kind, x.teacher_logprobs FROM samples x JOIN turns t ON t.id = x.turn_id JOIN judgements j ON j.turn_id = t.id WHERE t.idx = 0 ORDER BY t.id`).all() as { response_ids: string; score: number; hint: string | null; reward: number; kind: string; teacher_logprobs: string | null }[];
    assert.equal(rows.length, 8);
    let looping = 0;
    for (const r of rows) {
      const ids = s.store.decodeIds(r.response_ids);
      const isLoop = loops(ids, s.engine.tokenizer.decode(ids, true));
      assert.equal(r.score, -1);
      assert.ok(r.hint, 'the lexical judge hints at the dog');
      assert.equal(r.reward, -1, 'a complaint stays −1 under withhold');
      assert.equal(r.teacher_logprobs === null, isLoop, 'the teacher scores only answers that do not loop');
      assert.equal(r.kind, isLoop ? 'binary' : 'combine');
      if (isLoop) looping++;
    }
    assert.ok(looping > 0 && looping < 8, `some answers loop and some do not (${looping} of 8)`);
    assert.equal(trainer.counts.looping, looping);
  } finally {
    await s.close();
  }
});

test('loop guard punish under OPD alone: a looping answer becomes a −1 sample of its own (kind loop), outside the reward baseline; the rest carry nothing', { timeout: 120_000 }, async () => {
  const s = await startTestServer();
  try {
    const trainer = new TrainerLoop(s.store, s.engine, { method: 'opd', opdMode: 'topk', batchSize: 64, loopGuard: 'punish', tailGuard: 0, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints` });
    await trainer.init();
    await sessions(s, 'I love it, thanks!');
    await new JudgeLoop(s.store, new LexicalJudge(), { hints: true }).tick();
    await trainer.buildSamples();
    const rows = s.store.sql(`SELECT t.response_ids, x.kind, x.status, x.advantages FROM samples x JOIN turns t ON t.id = x.turn_id WHERE t.idx = 0 ORDER BY t.id`).all() as { response_ids: string; kind: string; status: string; advantages: string }[];
    assert.equal(rows.length, 8);
    let looping = 0;
    for (const r of rows) {
      const ids = s.store.decodeIds(r.response_ids);
      const isLoop = loops(ids, s.engine.tokenizer.decode(ids, true));
      assert.equal(r.kind, isLoop ? 'loop' : 'none');
      assert.equal(r.status, isLoop ? 'pending' : 'none');
      assert.deepEqual(JSON.parse(r.advantages), isLoop ? ids.map(() => -1) : []);
      if (isLoop) looping++;
    }
    assert.ok(looping > 0 && looping < 8, `some answers loop and some do not (${looping} of 8)`);
  } finally {
    await s.close();
  }
});

for (const lambda of [0.5, 0]) {
  test(`loop unlikelihood ${lambda}: ${lambda ? 'the looping answers\' repeats past the limit carry λ into the step, the other tokens nothing' : 'off, no datum carries the term'}`, { timeout: 120_000 }, async () => {
    const s = await startTestServer();
    try {
      const log: string[] = [];
      const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 8, loopGuard: 'punish', loopUnlikelihood: lambda, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints`, log: (l: string) => log.push(l) });
      await trainer.init();
      // the data each step is given (the real engine's call, observed, not replaced)
      const seen: Datum[] = [];
      const forwardBackward = s.engine.forwardBackward.bind(s.engine);
      s.engine.forwardBackward = (data, spec) => { seen.push(...data); return forwardBackward(data, spec); };
      await sessions(s, 'I love it, thanks!');
      await new JudgeLoop(s.store, new LexicalJudge(), { hints: false }).tick();
      await trainer.tick();
      s.engine.forwardBackward = forwardBackward;
      assert.ok(seen.length >= 8, `a step was taken (${seen.length} data)`);
      let marked = 0;
      for (const d of seen) {
        const excess = loopExcess(d.responseIds);
        if (lambda === 0 || excess.every((x) => x === 0)) { assert.equal(d.unlikelihood, undefined); continue; }
        assert.deepEqual(d.unlikelihood, excess.map((x) => x * lambda));
        marked += excess.reduce((a, x) => a + x, 0);
      }
      if (lambda) {
        assert.ok(marked > 0, 'the greedy stories loop: some tokens carry the term');
        assert.ok(log.some((l) => l.includes(`unlikelihood on ${marked} looping token(s)`)), 'the step line counts them');
      } else assert.ok(!log.some((l) => l.includes('unlikelihood')));
    } finally {
      await s.close();
    }
  });
}
