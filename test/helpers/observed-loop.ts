// A top-K combine learning loop on the test server with the engine observed (what each step trains on), and the
// scripted story conversations its tests feed it.
import assert from 'node:assert/strict';
import { post, type TestServer } from './server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop, type TrainerOptions } from '../../src/trainer/loop.ts';
import type { Datum } from '../../src/engine/types.ts';
import type { LossSpec } from '../../src/learn/losses.ts';

/** One story request, answered, and the user's reply: a complaint with a hint, praise, or a reply of the test's own. */
export async function conversation(s: TestServer, c: number, reply: boolean | string): Promise<number[]> {
  // true: the complaint; false: the praise; a string: that reply
  const text = typeof reply === 'string' ? reply : reply ? 'No, I wanted a story about a dog.' : 'I love it, thanks!';
  const prompt = [{ role: 'user', content: 'Once upon a time' }];
  const h = { 'x-session-id': `r-${c}` };
  const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: prompt, max_tokens: 16, temperature: 1, seed: c }, h);
  assert.equal(first.status, 200);
  const answer = first.json.choices[0].message.content as string;
  await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [...prompt, { role: 'assistant', content: answer }, { role: 'user', content: text }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
  const ids = (s.store.sql(`SELECT response_ids FROM turns WHERE session_id = ? ORDER BY idx LIMIT 1`).get(`r-${c}`) as { response_ids: string }).response_ids;
  return JSON.parse(ids) as number[];
}

/** A top-K combine trainer (batches of 4) and a hinting lexical judge on the test server, with the real engine observed: what each step trains on. */
export async function observedLoop(s: TestServer, o: Partial<TrainerOptions>) {
  const lines: string[] = [];
  const batches: Datum[][] = [], losses: LossSpec[] = [];
  const forwardBackward = s.engine.forwardBackward.bind(s.engine);
  s.engine.forwardBackward = (data, loss) => { batches.push(data); losses.push(loss); return forwardBackward(data, loss); };
  const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: true, concurrency: 8 });
  const trainer = new TrainerLoop(s.store, s.engine, {
    method: 'combine', opdMode: 'topk', entropyGuard: 0, hindsight: false, rewardBaseline: 'none',
    batchSize: 4, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/ckpt`, log: (l) => lines.push(l), ...o,
  });
  await trainer.init();
  return { lines, batches, losses, judge, trainer };
}
