// Hindsight answers in the learning loop: an approved answer that followed a correction is also
// trained as an answer to the corrected request (trainer/hindsight.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import type { Datum } from '../../src/engine/types.ts';

test('binary with hindsight: every approved answer after a correction adds one datum on the corrected request, its tail tokens left out under the tail guard', { timeout: 300_000 }, async () => {
  for (const [hindsight, tailGuard] of [[true, 0], [false, 0], [true, 0.05]] as const) {
    const s = await startTestServer();
    const lines: string[] = [];
    const batches: Datum[][] = [];
    const forwardBackward = s.engine.forwardBackward.bind(s.engine);
    s.engine.forwardBackward = (data, loss) => { batches.push(data); return forwardBackward(data, loss); };
    try {
      const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false, concurrency: 8 });
      const trainer = new TrainerLoop(s.store, s.engine, {
        method: 'binary', batchSize: 8, learningRate: 1e-3, hindsight, tailGuard, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/ckpt`, log: (l) => lines.push(l),
      });
      await trainer.init();
      const url = `${s.url}/v1/chat/completions`;
      for (let c = 0; c < 8; c++) {
        // ask → answer → correction → answer → approval → answer (session ends): a −1 turn, then a +1 turn
        const h = { 'x-session-id': `hs-${c}` };
        const messages: { role: string; content: string }[] = [{ role: 'user', content: 'Once upon a time' }];
        for (const feedback of ['No, I wanted a story about a dog.', 'I love it!']) {
          const r = await post(url, { model: 'stories', messages, max_tokens: 12, temperature: 1, seed: c }, h);
          messages.push({ role: 'assistant', content: r.json.choices[0].message.content }, { role: 'user', content: feedback });
        }
        await post(url, { model: 'stories', messages, max_tokens: 2 }, { ...h, 'x-session-done': '1' });
      }
      await judge.tick();
      await trainer.tick();
      assert.equal(trainer.step, 2, lines.join('\n'));
      if (tailGuard > 0) {
        // a hindsight datum is its approved answer on the corrected request: zero where that answer was sampled below 5%
        let zeroed = 0;
        for (const batch of batches) {
          const answers = batch.filter((d) => d.advantages!.some((x) => x > 0) && d.behaviourLogprobs);
          for (const h of batch.slice(8)) {
            const own = answers.find((d) => d !== h && JSON.stringify(d.responseIds) === JSON.stringify(h.responseIds))!;
            assert.ok(own, 'each hindsight datum has its approved answer in the batch');
            h.advantages!.forEach((x, t) => {
              if (own.behaviourLogprobs![t] < Math.log(tailGuard)) { assert.equal(x, 0); zeroed++; } else assert.ok(x > 0);
            });
          }
        }
        assert.ok(zeroed > 0, 'some hindsight tokens were tail tokens');
      }
      const steps = lines.filter((l) => /^trainer: step \d/.test(l));
      const added = steps.map((l) => Number(/, (\d+) hindsight answer/.exec(l)?.[1] ?? 0)).reduce((a, b) => a + b, 0);
      // the batches hold the 8 approved answers; each follows exactly one correction
      assert.equal(added, hindsight ? 8 : 0, steps.join('\n'));
    } finally {
      await s.close();
    }
  }
});
