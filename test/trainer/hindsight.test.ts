// Hindsight answers in the learning loop: an approved answer that followed a correction is also
// trained as an answer to the corrected request (trainer/hindsight.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';

test('binary with hindsight: every approved answer after a correction adds one datum on the corrected request', { timeout: 300_000 }, async () => {
  for (const hindsight of [true, false]) {
    const s = await startTestServer();
    const lines: string[] = [];
    try {
      const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false, concurrency: 8 });
      const trainer = new TrainerLoop(s.store, s.engine, {
        method: 'binary', batchSize: 8, learningRate: 1e-3, hindsight, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/ckpt`, log: (l) => lines.push(l),
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
      const steps = lines.filter((l) => /^trainer: step \d/.test(l));
      const added = steps.map((l) => Number(/, (\d+) hindsight answer/.exec(l)?.[1] ?? 0)).reduce((a, b) => a + b, 0);
      // the batches hold the 8 approved answers; each follows exactly one correction
      assert.equal(added, hindsight ? 8 : 0, steps.join('\n'));
    } finally {
      await s.close();
    }
  }
});
