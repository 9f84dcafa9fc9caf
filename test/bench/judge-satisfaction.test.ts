// Judge-scored satisfaction (upstream's evaluator: 0–1 in \boxed{}, mean of 5 votes) against a scripted
// OpenAI-compatible judge endpoint (a labelled test double), alone and inside `bench personalize`,
// and the stable-effect stop.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LlmBackend } from '../../src/judge/backends.ts';
import { judgeSatisfaction, satisfactionPrompt } from '../../src/bench/judge-satisfaction.ts';
import { runPersonalize, writeReport } from '../../src/bench/personalize.ts';
import { loadPersona } from '../../src/bench/persona.ts';
import { PERSONAS_DIR } from '../../src/cli/bench.ts';
import { JUDGE_DEFAULTS } from '../../src/judge/config.ts';
import { startScriptedJudge, type ScriptedJudge } from '../helpers/judge-server.ts';
import { STORIES, tempDir } from '../helpers/models.ts';

let sj: ScriptedJudge;
before(async () => { sj = await startScriptedJudge(); });
after(async () => { await sj.close(); });

test('five votes, the mean of the valid grades; the judge sees the preference, the request and the answer', async () => {
  const texts = ['Fits well. \\boxed{1}', 'no grade here', '\\boxed{0.5}', '\\boxed{0.75}', '\\boxed{7}'];
  let k = 0;
  sj.received.length = 0;
  sj.script = () => ({ text: texts[k++ % texts.length] });
  const backend = new LlmBackend({ baseUrl: sj.url, model: 'judge', maxConcurrent: 1 });
  const r = await judgeSatisfaction(backend, 'Wants every story to be about a dog.', 'Tell me a story.', 'Once upon a time, a dog ran.');
  assert.deepEqual(r.grades, [1, null, 0.5, 0.75, null]);
  assert.equal(r.score, 0.75);
  assert.equal(sj.received.length, 5);
  const shown = sj.received[0].messages.map((m) => m.content).join('\n');
  for (const part of ['Wants every story to be about a dog.', 'Tell me a story.', 'Once upon a time, a dog ran.', '\\boxed{']) assert.ok(shown.includes(part), part);
  // a judge that is down gives no grade, not a crash
  sj.script = () => ({ status: 400 });
  assert.deepEqual(await judgeSatisfaction(new LlmBackend({ baseUrl: sj.url, model: 'judge', retries: 0 }), 'p', 'r', 'a'), { score: null, grades: [null, null, null, null, null] });
  // the compact prompt clips a long answer for small-context judges
  const compact = satisfactionPrompt('p', 'r', 'x'.repeat(1000), true);
  assert.ok(compact[1].content.length < 400);
});

test('bench personalize with --judge-satisfaction: every evaluation has a judge-scored rate beside the rule-based one, samples keep their grades', { timeout: 300_000 }, async () => {
  // PRM and hint votes get −1; satisfaction prompts get a grade from the answer by the persona's own rule (1 when
  // it has one of the words dog, dogs, puppy; "dogay" is not one)
  sj.script = (req) => {
    const all = req.messages.map((m) => m.content).join('\n');
    if (/personalised/.test(all)) return { text: /Answer:\n[\s\S]*\b(dogs?|puppy)\b/i.test(all) ? '\\boxed{1}' : '\\boxed{0.25}' };
    return { text: '\\boxed{-1}' };
  };
  const persona = loadPersona(join(PERSONAS_DIR, 'dog-lover.json'));
  const r = await runPersonalize({
    model: STORIES, persona, method: 'binary', conversations: 16, evalEvery: 8, evalK: 2, judgeSatisfaction: true,
    judge: { ...JUDGE_DEFAULTS, kind: 'llm', url: sj.url, model: 'judge', votes: 1 },
  });
  assert.equal(r.curve.length, 3);
  for (const p of r.curve) {
    assert.equal(p.judgeValidVotes, 1);
    // the scripted grades follow the rule (dog → 1, else 0.25), so the two rates agree exactly
    assert.ok(Math.abs(p.judgeSatisfaction! - (0.25 + 0.75 * p.rate)) < 1e-9, `judge ${p.judgeSatisfaction} vs rule ${p.rate}`);
  }
  assert.ok(r.samples.every((x) => x.judgeGrades?.length === 5 && x.judgeScore === (x.satisfied ? 1 : 0.25)));
  assert.deepEqual(Object.keys(r.stable).sort(), ['at', 'confirmedAt', 'gain']);
  const tmp = tempDir();
  try {
    const files = await writeReport(tmp.dir, [r]);
    assert.match(readFileSync(files[5], 'utf8'), /judge-scored \(base → final\)/);
  } finally {
    tmp.cleanup();
  }
});
