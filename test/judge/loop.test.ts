// The judge loop on real conversations through the HTTP server: lexical judge end to end, and the
// `self` judge (the served model with adapters off) running beside chat traffic on one engine.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post } from '../helpers/server.ts';
import { JudgeLoop, judgeInputOf } from '../../src/judge/loop.ts';
import { LexicalJudge, PrmJudge } from '../../src/judge/judge.ts';
import { SelfBackend } from '../../src/judge/backends.ts';
import { median } from '../../src/bench/stats.ts';

const chat = (url: string, session: string, messages: unknown[]) => post(`${url}/v1/chat/completions`, { model: 'stories', messages, max_tokens: 12, temperature: 0 }, { 'x-session-id': session });

test('lexical judge end to end: conversations → paired next states → judgements with hints, votes kept, JSONL written', async () => {
  const s = await startTestServer();
  try {
    const opening = [{ role: 'user', content: 'Once upon a time' }];
    for (const [session, reply] of [['happy', 'Thanks, I love it!'], ['unhappy', 'No, I wanted a story about a dog.'], ['neutral', 'What happened next?']]) {
      const first = await chat(s.url, session, opening);
      await chat(s.url, session, [...opening, { role: 'assistant', content: first.json.choices[0].message.content }, { role: 'user', content: reply }]);
    }
    const loop = new JudgeLoop(s.store, new LexicalJudge(), { hints: true, concurrency: 4 });
    assert.equal(await loop.tick(), 3);
    assert.equal(await loop.tick(), 0, 'the second turns have no next state yet');
    const verdict = (session: string) => s.store.judgement(s.store.turns(session)[0].id)!;
    assert.deepEqual([verdict('happy').score, verdict('unhappy').score, verdict('neutral').score], [1, -1, 0]);
    assert.equal(verdict('unhappy').hint, 'The user wants a story about a dog.');
    assert.equal(verdict('happy').hint, null);
    const votes = JSON.parse(verdict('unhappy').votes_json);
    assert.equal(votes[0].backend, 'lexical');
    assert.equal(s.store.judgementsLog.read().length, 3);
    // what a judge sees of a turn: the answer as the client got it and the next state with its role
    const input = judgeInputOf(s.store.turns('unhappy')[0], true);
    assert.equal(input.nextState.role, 'user');
    assert.equal(input.nextState.text, 'No, I wanted a story about a dog.');
    assert.equal(input.context!.length, 1);
  } finally {
    await s.close();
  }
});

test('self judge: runs on the served model with adapters off, at low priority; chat latency stays near idle', async () => {
  const s = await startTestServer();
  try {
    const backend = new SelfBackend(s.engine);
    // judging is low priority and uses the base weights even after a trained version is published
    await s.engine.configureTraining({ rank: 4, alpha: 8, seed: 1 });
    const prompt = s.engine.tokenizer.encode('Once upon a time');
    for (let i = 0; i < 3; i++) { await s.engine.forwardBackward([{ promptIds: prompt, responseIds: [432, 261, 282, 425] }], { kind: 'cross_entropy' }); await s.engine.optimStep({ learningRate: 1e-2 }); }
    await s.engine.publish(await s.engine.saveWeights());
    const { collect } = await import('../../src/engine/types.ts');
    const baseRun = await collect(s.engine.sample(prompt, { maxTokens: 4, temperature: 0, topP: 1, topK: 0, weights: 'base', priority: 'low' }));
    const servedRun = await collect(s.engine.sample(prompt, { maxTokens: 4, temperature: 0, topP: 1, topK: 0 }));
    assert.deepEqual([baseRun.policyVersion, servedRun.policyVersion], [0, 1]);
    const judge = new PrmJudge(backend, { m: 3, maxTokens: 48 });
    const input = { response: 'Once upon a time there was a cat.', nextState: { role: 'user' as const, text: 'Thanks!', looksLikeError: false } };
    const j = await judge.judge(input, { hints: true });
    assert.equal(j.votes.length, 6);
    assert.ok(j.votes.every((v) => v.backend === 'self' && v.text.length > 0 && !v.error));

    const measure = async (n: number) => {
      const times: number[] = [];
      for (let i = 0; i < n; i++) {
        const t0 = performance.now();
        const r = await chat(s.url, `lat-${i}`, [{ role: 'user', content: 'Once upon a time' }]);
        assert.equal(r.status, 200);
        times.push(performance.now() - t0);
      }
      return median(times);
    };
    const idle = await measure(15);
    // keep the self judge busy while measuring again
    let stop = false, judged = 0;
    const background = (async () => { while (!stop) { await judge.judge(input, { hints: true }); judged++; } })();
    const busy = await measure(15);
    stop = true;
    await background;
    console.log(`# chat p50 latency: ${idle.toFixed(1)} ms idle, ${busy.toFixed(1)} ms while the self judge ran (${judged} judgements)`);
    assert.ok(judged >= 1);
    // with the prefix cache an idle chat of this repeated prompt can take a few ms, and then the
    // judge rows sharing its steps dominate: the bound keeps a floor of a few shared steps
    assert.ok(busy < Math.max(idle * 4 + 30, 150), `chat p50 ${busy} ms while judging vs ${idle} ms idle`);
  } finally {
    await s.close();
  }
});
