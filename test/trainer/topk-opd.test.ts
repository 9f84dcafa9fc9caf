// Top-K OPD in the learning loop: the distillation sets the trainer builds (student's old top-K under
// the weights being trained, teacher = the request with the hint in the last user turn, rendered by
// the chat template) recomputed independently, and a short run of the loop in top-K combine mode.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop } from '../../src/trainer/loop.ts';
import { distillSets } from '../../src/trainer/distill.ts';
import { withHint, HINT_MARKER } from '../../src/learn/hint-prompt.ts';
import { hintMetAt, hintContentWords } from '../../src/learn/votes.ts';
import { collect } from '../../src/engine/types.ts';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { STORIES } from '../helpers/models.ts';

/** stories260K with a fresh LoRA adapter and one sampled answer to 'Once upon a time'. */
async function sampledTurn() {
  const engine = await EmbeddedEngine.load(STORIES);
  await engine.configureTraining({ rank: 4, alpha: 8, seed: 5 });
  const messages = [{ role: 'user' as const, content: 'Once upon a time' }];
  const promptIds = engine.tokenizer.encodeChat(messages);
  const r = await collect(engine.sample(promptIds, { maxTokens: 12, temperature: 1, topP: 1, topK: 0, seed: 3 }));
  return { engine, messages, promptIds, r };
}

test('distillation sets: the student top-4 under the trained weights, the chosen hint by overlap, advantages clip(teacher − old, ±1)·softmax(old)', async () => {
  const { engine, messages, promptIds, r } = await sampledTurn();
  try {
    const hints = ['Write about a dog.', 'The user wants a story about a big red ball.'];
    const { sets, stats } = await distillSets(engine, [{ promptIds, responseIds: r.ids, temperature: 1, request: { messages }, hints }],
      { k: 4, selection: 'sequence_optimal', advantageClip: 1, weight: 1, teacher: 'base' });
    assert.equal(stats.samples, 1);
    assert.equal(stats.candidates, 2);
    const set = sets[0]!;
    // recompute independently: the student's top-4, each hinted teacher's log-probs at those ids
    const [student] = await engine.scoreTopK([{ promptIds, responseIds: r.ids }], 4, { adapter: 'current' });
    assert.deepEqual(set.ids, student.topIds);
    assert.deepEqual(set.oldLogprobs, student.topLogprobs);
    const teachers = await Promise.all(hints.map(async (h) => {
      const p = engine.tokenizer.encodeChat(withHint(messages, h));
      assert.ok(engine.tokenizer.decode(p).includes(`${HINT_MARKER}\n${h}`), 'the hint is inside the user turn, in the recipe\'s form');
      return (await engine.scoreTopK([{ promptIds: p, responseIds: r.ids, gatherIds: student.topIds }], 4, { adapter: 'base' }))[0];
    }));
    const overlapSum = teachers.map((t) => t.topIds.reduce((a, ids, i) => a + ids.filter((id) => student.topIds[i].includes(id)).length, 0));
    const k = overlapSum[1] > overlapSum[0] ? 1 : 0;
    set.advantages.forEach((row, t) => {
      const w = student.topLogprobs[t].map(Math.exp), z = w.reduce((a, b) => a + b, 0);
      row.forEach((a, v) => {
        const expected = Math.max(-1, Math.min(1, teachers[k].gathered![t][v] - student.topLogprobs[t][v])) * (w[v] / z);
        assert.ok(Math.abs(a - expected) < 1e-9, `token ${t} entry ${v}: ${a} vs ${expected}`);
      });
    });
    // no hint: one candidate, the teacher on the prompt itself (the base pulls the student's top-K towards it)
    const plain = await distillSets(engine, [{ promptIds, responseIds: r.ids, temperature: 1, request: { messages }, hints: [] }], { k: 4, selection: 'shortest', advantageClip: 1, weight: 0.5, teacher: 'base' });
    assert.equal(plain.stats.candidates, 1);
    const [base] = await engine.scoreTopK([{ promptIds, responseIds: r.ids, gatherIds: student.topIds }], 4, { adapter: 'base' });
    const w0 = student.topLogprobs[0].map(Math.exp), z0 = w0.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(plain.sets[0]!.advantages[0][0] - 0.5 * Math.max(-1, Math.min(1, base.gathered![0][0] - student.topLogprobs[0][0])) * (w0[0] / z0)) < 1e-9);
  } finally {
    await engine.close();
  }
});

test('joined distillation sets (--topk-set union): the student top-4 plus the chosen teacher top-4, old and teacher log-probs at each, mixed weights', async () => {
  const { engine, messages, promptIds, r } = await sampledTurn();
  try {
    const hint = 'The user wants a story about a big red ball.';
    const { sets, stats } = await distillSets(engine, [{ promptIds, responseIds: r.ids, temperature: 1, request: { messages }, hints: [hint] }],
      { k: 4, selection: 'sequence_optimal', advantageClip: 1, weight: 1, teacher: 'base', set: 'union' });
    const set = sets[0]!;
    const [student] = await engine.scoreTopK([{ promptIds, responseIds: r.ids }], 4, { adapter: 'current' });
    const p = engine.tokenizer.encodeChat(withHint(messages, hint));
    const [teacher] = await engine.scoreTopK([{ promptIds: p, responseIds: r.ids, gatherIds: student.topIds }], 4, { adapter: 'base' });
    const [atTeacherTop] = await engine.scoreTopK([{ promptIds, responseIds: r.ids, gatherIds: teacher.topIds }], 4, { adapter: 'current' });
    let added = 0;
    set.ids.forEach((ids, t) => {
      const extra = teacher.topIds[t].map((id, j) => [id, j]).filter(([id]) => !student.topIds[t].includes(id));
      added += extra.length;
      assert.deepEqual(ids, [...student.topIds[t], ...extra.map(([id]) => id)], `token ${t}`);
      const old = [...student.topLogprobs[t], ...extra.map(([, j]) => atTeacherTop.gathered![t][j])];
      const tl = [...teacher.gathered![t], ...extra.map(([, j]) => teacher.topLogprobs[t][j])];
      assert.deepEqual(set.oldLogprobs[t], old);
      // each old log-prob at a teacher id is the student's own log-prob of it (bit-equal to its top-K where both hold it)
      extra.forEach(([, j], e) => { assert.ok(Number.isFinite(old[4 + e])); assert.ok(old[4 + e] <= student.topLogprobs[t][3] + 1e-6); });
      const wo = old.map(Math.exp), zo = wo.reduce((a, b) => a + b, 0), wt = tl.map(Math.exp), zt = wt.reduce((a, b) => a + b, 0);
      set.advantages[t].forEach((a, v) => {
        const expected = Math.max(-1, Math.min(1, tl[v] - old[v])) * 0.5 * (wo[v] / zo + wt[v] / zt);
        assert.ok(Math.abs(a - expected) < 1e-9, `token ${t} entry ${v}: ${a} vs ${expected}`);
      });
    });
    assert.ok(added > 0, 'the hinted teacher named at least one id outside the student top-4');
    assert.ok(Math.abs(stats.joined - added / r.ids.length) < 1e-9);
  } finally {
    await engine.close();
  }
});

test('distillation until the hint is met (--distill-until-met): positions after the answer has what the hint asks for get zero advantages, the rest are unchanged', async () => {
  const { engine, messages, promptIds, r } = await sampledTurn();
  try {
    // a hint asking for a word the answer writes early (its first word of four letters or more that a hint would ask for)
    const word = r.text.match(/[A-Za-z]{4,}/g)!.find((w) => hintContentWords(`The user wants ${w}.`).length === 1)!;
    const hint = `The user wants a story about ${word.toLowerCase()}.`;
    const prefixes = r.ids.map((_, t) => engine.tokenizer.decode(r.ids.slice(0, t + 1)));
    const metAt = hintMetAt(hint, prefixes);
    assert.ok(metAt !== null && metAt < r.ids.length - 1, `"${word}" is met before the answer's last token (${metAt} of ${r.ids.length}): ${r.text}`);
    const input = { promptIds, responseIds: r.ids, temperature: 1, request: { messages }, hints: [hint] };
    const o = { k: 4, selection: 'sequence_optimal' as const, advantageClip: 1, weight: 2, teacher: 'base' as const };
    const all = await distillSets(engine, [input], o);
    const until = await distillSets(engine, [input], { ...o, untilMet: true });
    assert.equal(until.stats.afterMet, r.ids.length - 1 - metAt);
    assert.equal(all.stats.afterMet, 0);
    until.sets[0]!.advantages.forEach((row, t) => {
      assert.deepEqual(until.sets[0]!.ids[t], all.sets[0]!.ids[t]);
      if (t <= metAt) assert.deepEqual(row, all.sets[0]!.advantages[t], `position ${t} is distilled as before`);
      else assert.ok(row.every((a) => a === 0), `position ${t} comes after the hint was met`);
    });
    assert.ok(all.sets[0]!.advantages.slice(metAt + 1).some((row) => row.some((a) => a !== 0)), 'without the option those positions had a signal');
  } finally {
    await engine.close();
  }
});

test('the loop in top-K combine mode: hinted turns keep their candidates, steps train with distillation sets and publish', { timeout: 300_000 }, async () => {
  const s = await startTestServer();
  const lines: string[] = [];
  try {
    const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: true, concurrency: 8 });
    const trainer = new TrainerLoop(s.store, s.engine, {
      method: 'combine', opdMode: 'topk', batchSize: 8, learningRate: 3e-3, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/ckpt`, maxStaleness: 8, log: (l) => lines.push(l),
    });
    await trainer.init();
    for (let c = 0; c < 16; c++) {
      const h = { 'x-session-id': `topk-${c}` };
      const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 16, temperature: 1, seed: c }, h);
      const answer = first.json.choices[0].message.content as string;
      const feedback = /\bdog/i.test(answer) ? 'I love it!' : 'No, I wanted a story about a dog.';
      await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once upon a time' }, { role: 'assistant', content: answer }, { role: 'user', content: feedback }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
      await judge.tick();
      await trainer.tick();
    }
    assert.ok(trainer.step >= 1, `no step taken: ${lines.join('\n')}`);
    const hinted = s.store.db.prepare(`SELECT kind, hint FROM samples WHERE hint IS NOT NULL`).all() as { kind: string; hint: string }[];
    assert.ok(hinted.length > 0);
    for (const h of hinted) {
      assert.ok(['opd', 'combine'].includes(h.kind));
      assert.deepEqual(JSON.parse(h.hint), ['The user wants a story about a dog.']);
    }
    assert.ok(lines.some((l) => /top-4 OPD on \d+/.test(l)), lines.join('\n'));
    // only hinted turns are distilled: approved answers without a hint are not pulled towards the teacher
    const distilled = lines.reduce((a, l) => a + Number(/top-4 OPD on (\d+)/.exec(l)?.[1] ?? 0), 0);
    const trainedHinted = (s.store.db.prepare(`SELECT COUNT(*) AS n FROM samples WHERE hint IS NOT NULL AND status = 'trained'`).get() as { n: number }).n;
    assert.ok(distilled > 0 && distilled <= trainedHinted, `${distilled} distilled, ${trainedHinted} hinted trained`);
    assert.equal((await s.engine.versions()).published, trainer.version);
  } finally {
    await s.close();
  }
});

test('two teachers (--opd-teacher both): each entry keeps the live teacher\'s advantage only as far as the hinted base pushes it the same way', async () => {
  const { engine, messages, promptIds, r } = await sampledTurn();
  try {
    // move the weights off the base, so the live policy and the base are two teachers
    for (let i = 0; i < 3; i++) {
      await engine.forwardBackward([{ promptIds, responseIds: r.ids, advantages: r.ids.map(() => 1), lossMask: r.ids.map(() => 1) }], { kind: 'cross_entropy' });
      await engine.optimStep({ learningRate: 3e-2 });
    }
    const hint = 'The user wants a story about a big red ball.';
    const input = { promptIds, responseIds: r.ids, temperature: 1, request: { messages }, hints: [hint] };
    const o = { k: 4, selection: 'sequence_optimal' as const, advantageClip: 1, weight: 1, set: 'union' as const };
    const live = (await distillSets(engine, [input], { ...o, teacher: 'policy' })).sets[0]!;
    const both = await distillSets(engine, [input], { ...o, teacher: 'both' });
    const set = both.sets[0]!;
    assert.deepEqual(set.ids, live.ids, 'the same sets: the base only rescales them');
    assert.deepEqual(set.oldLogprobs, live.oldLogprobs);
    assert.equal(both.stats.candidates, 2, 'one live-teacher pass and one base pass');
    // recompute independently: both teachers' log-probs at every entry of the final sets
    const p = engine.tokenizer.encodeChat(withHint(messages, hint));
    const [pol] = await engine.scoreTopK([{ promptIds: p, responseIds: r.ids, gatherIds: set.ids }], 0, { adapter: 'current' });
    const [base] = await engine.scoreTopK([{ promptIds: p, responseIds: r.ids, gatherIds: set.ids }], 0, { adapter: 'base' });
    let scaled = 0, kept = 0, dropped = 0;
    set.advantages.forEach((row, t) => row.forEach((a, v) => {
      const old = set.oldLogprobs[t][v], gp = Math.max(-1, Math.min(1, pol.gathered![t][v] - old)), gb = Math.max(-1, Math.min(1, base.gathered![t][v] - old));
      const want = gp === 0 || gp * gb <= 0 ? 0 : live.advantages[t][v] * Math.min(Math.abs(gp), Math.abs(gb)) / Math.abs(gp);
      assert.ok(Math.abs(a - want) < 1e-9, `token ${t} entry ${v}: ${a} vs ${want}`);
      if (want === 0 && live.advantages[t][v] !== 0) dropped++;
      else if (Math.abs(a - live.advantages[t][v]) > 1e-12) scaled++;
      else kept++;
    }));
    assert.ok(scaled > 0 && kept > 0 && dropped > 0, `scaled ${scaled}, kept ${kept}, dropped ${dropped}`);
  } finally {
    await engine.close();
  }
});
