// The likelihood guard in the trainer, on stories260K: the base answers the first judged requests once each to set
// the floor (learn/likelihood-guard.ts); from then on a judged answer the base finds less likely than the floor loses
// its approval and is not distilled, and the trainer counts it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import { guardedReward } from '../../src/learn/loops.ts';
import { meanLogLikelihood } from '../../src/learn/fluency.ts';

const PROMPTS = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily'];

/** Ten sessions of one sampled answer each (hot, so that some fall apart), followed by the feedback. */
async function sessions(s: Awaited<ReturnType<typeof startTestServer>>, feedback: string): Promise<void> {
  for (let c = 0; c < 10; c++) {
    const h = { 'x-session-id': `c-${c}` }, prompt = PROMPTS[c % 4];
    const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 24, temperature: 1.6, seed: c }, h);
    assert.equal(first.status, 200);
    const answer = first.json.choices[0].message.content as string;
    const second = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
    assert.equal(second.status, 200);
  }
}

type Row = { prompt_ids: string; response_ids: string; score: number; hint: string | null; reward: number; kind: string; teacher_logprobs: string | null };

async function judgedRows(s: Awaited<ReturnType<typeof startTestServer>>, trainer: TrainerLoop, hints: boolean): Promise<{ rows: Row[]; means: number[] }> {
  await new JudgeLoop(s.store, new LexicalJudge(), { hints }).tick();
  await trainer.buildSamples();
  const rows = s.store.sql(`SELECT t.prompt_ids, t.response_ids, j.score, j.hint, x.reward, x.kind, x.teacher_logprobs FROM samples x JOIN turns t ON t.id = x.turn_id JOIN judgements j ON j.turn_id = t.id WHERE t.idx = 0 ORDER BY t.id`).all() as Row[];
  const means: number[] = [];
  for (const r of rows) {
    const [lp] = await s.engine.score([{ promptIds: s.store.decodeIds(r.prompt_ids), responseIds: s.store.decodeIds(r.response_ids) }], { adapter: 'base' });
    means.push(meanLogLikelihood(lp));
  }
  return { rows, means };
}

const FLOOR = { percentile: 0.5, minSamples: 2, maxSamples: 3 };

test('likelihood guard withhold: after calibration, approved answers below the base\'s floor lose their reward; the first answers pass', { timeout: 120_000 }, async () => {
  const s = await startTestServer();
  try {
    const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 64, loopGuard: 'off', likelihoodGuard: 'withhold', likelihoodFloor: FLOOR, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints` });
    await trainer.init();
    await sessions(s, 'I love it, thanks!');
    const { rows, means } = await judgedRows(s, trainer, false);
    assert.equal(rows.length, 10);
    assert.equal(trainer.likelihoodFloor.samples, 3, 'the base answered the first three requests, then calibration stopped');
    const floor = trainer.likelihoodFloor.floor!;
    assert.ok(Number.isFinite(floor) && floor < 0, `a floor in nats per token (${floor})`);
    assert.equal(rows[0].reward, 1, 'the first answer is judged before any floor exists');
    let unlikely = 0;
    rows.forEach((r, i) => {
      assert.equal(r.score, 1, 'the lexical judge approves every answer');
      if (i < 2) return; // judged while the floor was still moving
      assert.equal(r.reward, guardedReward(1, means[i] < floor, 'withhold'), `answer ${i}: base ${means[i].toFixed(3)} vs floor ${floor.toFixed(3)}`);
      if (means[i] < floor) unlikely++;
    });
    assert.ok(unlikely > 0 && unlikely < 8, `some of the later answers are below the floor and some are not (${unlikely} of 8)`);
    assert.ok(trainer.counts.unlikely >= unlikely);
    assert.match(trainer.metrics(), new RegExp(`openclaw_rl_train_unlikely_answers_total ${trainer.counts.unlikely}\\n`));
    assert.equal(trainer.status().likelihoodFloor, floor);
    // a restart keeps the floor: the base's answers were recorded, and the new trainer samples none
    const restarted = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 64, loopGuard: 'off', likelihoodGuard: 'withhold', likelihoodFloor: FLOOR, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints` });
    await restarted.init();
    assert.equal(restarted.likelihoodFloor.samples, 3);
    assert.equal(restarted.likelihoodFloor.calibrating, false);
    assert.equal(restarted.likelihoodFloor.floor, floor);
  } finally {
    await s.close();
  }
});

test('likelihood guard: an unlikely answer with a hint is not distilled; the others are; off leaves every answer alone', { timeout: 120_000 }, async () => {
  for (const guard of ['withhold', 'off'] as const) {
    const s = await startTestServer();
    try {
      const trainer = new TrainerLoop(s.store, s.engine, { method: 'combine', opdMode: 'token', batchSize: 64, loopGuard: 'off', likelihoodGuard: guard, likelihoodFloor: FLOOR, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints` });
      await trainer.init();
      await sessions(s, 'No, I wanted a story about a dog.');
      const { rows, means } = await judgedRows(s, trainer, true);
      const floor = trainer.likelihoodFloor.floor;
      if (guard === 'off') {
        assert.equal(trainer.likelihoodFloor.samples, 0, 'no base answers are sampled with the guard off');
        assert.ok(rows.every((r) => r.teacher_logprobs !== null && r.reward === -1));
        assert.equal(trainer.counts.unlikely, 0);
        continue;
      }
      let unlikely = 0;
      rows.forEach((r, i) => {
        assert.equal(r.reward, -1, 'a complaint stays −1 under withhold');
        assert.ok(r.hint, 'the lexical judge hints at the dog');
        if (i < 2) return;
        const below = means[i] < floor!;
        assert.equal(r.teacher_logprobs === null, below, `answer ${i}: the teacher scores only answers above the floor`);
        assert.equal(r.kind, below ? 'binary' : 'combine');
        if (below) unlikely++;
      });
      assert.ok(unlikely > 0 && unlikely < 8, `some answers are below the floor and some are not (${unlikely} of 8)`);
    } finally {
      await s.close();
    }
  }
});
