// The trainer on stories260K with samples of older versions, batches without signal and neutral
// turns: stale samples are trained with truncated importance weights (never dropped by default),
// a batch with no gradient signal takes no step and publishes no version, and the at-least-one rule
// can be switched off.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post, type TestServer } from '../helpers/server.ts';
import { JudgeLoop } from '../../src/judge/loop.ts';
import { LexicalJudge } from '../../src/judge/judge.ts';
import { TrainerLoop, type TrainerOptions } from '../../src/trainer/loop.ts';
import { importanceWeight } from '../../src/learn/staleness.ts';

const PROMPTS = ['Once upon a time', 'One day, a little girl', 'There was a boy', 'Tom and Lily'];
const FEEDBACK = { '+': 'I love it, thanks!', '-': 'No, I wanted a story about a dog.', '0': 'What happened next?' };

/** One story request and the user's scripted feedback (+, − or neutral), then the session ends. */
async function conversation(s: TestServer, c: number, verdict: '+' | '-' | '0'): Promise<void> {
  const prompt = PROMPTS[c % PROMPTS.length];
  const h = { 'x-session-id': `c-${c}` };
  const first = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }], max_tokens: 16, temperature: 1, seed: c }, h);
  assert.equal(first.status, 200);
  const answer = first.json.choices[0].message.content as string;
  const second = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: prompt }, { role: 'assistant', content: answer }, { role: 'user', content: FEEDBACK[verdict] }], max_tokens: 2 }, { ...h, 'x-session-done': '1' });
  assert.equal(second.status, 200);
}

async function setUp(o: Partial<TrainerOptions>) {
  const s = await startTestServer();
  const trainer = new TrainerLoop(s.store, s.engine, { method: 'binary', batchSize: 4, learningRate: 1e-2, lora: { rank: 4, alpha: 8, seed: 1 }, checkpointDir: `${s.dataDir}/checkpoints`, ...o });
  await trainer.init();
  const judge = new JudgeLoop(s.store, new LexicalJudge(), { hints: false });
  const status = (turnId: number) => (s.store.sql('SELECT status FROM samples WHERE turn_id = ?').get(turnId) as { status: string } | undefined)?.status;
  return { s, trainer, judge, status };
}

test('samples of an older version are trained with truncated importance weights from their behaviour log-probs, none dropped', { timeout: 120_000 }, async () => {
  // after the first step, score the second batch under the weights the second step will update
  let expected = NaN;
  let secondBatch: { prompt_ids: string; response_ids: string; response_logprobs: string }[] = [];
  const { s, trainer, judge, status } = await setUp({
    rewardBaseline: 'none',
    onStep: async (r) => {
      if (r.step !== 1) return;
      const proximal = await s.engine.score(secondBatch.map((t) => ({ promptIds: JSON.parse(t.prompt_ids), responseIds: JSON.parse(t.response_ids) })), { temperature: 1, adapter: 'current' });
      let sum = 0, n = 0;
      secondBatch.forEach((t, k) => (JSON.parse(t.response_logprobs) as number[]).forEach((b, i) => { sum += importanceWeight(proximal[k][i], b); n++; }));
      expected = sum / n;
    },
  });
  try {
    // eight turns served by version 0; the second batch is trained after the first step published version 1
    for (let c = 0; c < 8; c++) await conversation(s, c, c % 3 ? '-' : '+');
    await judge.tick();
    await trainer.buildSamples();
    secondBatch = s.store.sql(`SELECT t.* FROM samples x JOIN turns t ON t.id = x.turn_id ORDER BY t.id LIMIT 4 OFFSET 4`).all() as typeof secondBatch;
    const firstVersion = trainer.version;
    await trainer.tick();
    assert.equal(trainer.step, 2);
    const firstTurns = s.store.turns().filter((t) => t.idx === 0).map((t) => t.id);
    assert.deepEqual(firstTurns.map(status), Array(8).fill('trained'), 'every sample trained, none stale');
    assert.equal(trainer.counts.stale, 0);
    // the second step's recorded mean weight is what the weights of version 1 give those samples
    const steps = s.store.sql('SELECT version, staleness_mean, mean_ratio FROM training_steps ORDER BY id').all() as { version: number; staleness_mean: number; mean_ratio: number }[];
    assert.equal(steps[0].staleness_mean, 0);
    assert.equal(steps[0].mean_ratio, 1, 'fresh samples weigh exactly 1');
    assert.equal(steps[1].staleness_mean, steps[0].version - firstVersion);
    assert.ok(Math.abs(steps[1].mean_ratio - expected) < 1e-6, `recorded ${steps[1].mean_ratio}, recomputed ${expected}`);
    assert.notEqual(steps[1].mean_ratio, 1, 'the weights moved, so the samples are off-policy');
    // the distribution in status and metrics
    const st = trainer.status() as { staleness: Record<string, number> };
    assert.deepEqual([st.staleness['0'], st.staleness['≤1']], [4, 4]);
    const metrics = trainer.metrics();
    assert.match(metrics, /openclaw_rl_train_staleness_versions_bucket\{le="0"\} 4\n/);
    assert.match(metrics, /openclaw_rl_train_staleness_versions_bucket\{le="1"\} 8\n/);
    assert.match(metrics, /openclaw_rl_train_staleness_versions_count 8\n/);
    assert.match(metrics, /openclaw_rl_train_importance_weight_mean 0\.\d+|openclaw_rl_train_importance_weight_mean 1\.\d+/);
  } finally {
    await s.close();
  }
});

test('an explicit --max-staleness still drops samples further behind than asked', { timeout: 120_000 }, async () => {
  const { s, trainer, judge, status } = await setUp({ rewardBaseline: 'none', maxStaleness: 0 });
  try {
    for (let c = 0; c < 8; c++) await conversation(s, c, c % 2 ? '-' : '+');
    await judge.tick();
    await trainer.tick();
    const ids = s.store.turns().filter((t) => t.idx === 0).map((t) => t.id);
    assert.deepEqual(ids.map(status), [...Array(4).fill('trained'), ...Array(4).fill('stale')]);
    assert.equal(trainer.counts.stale, 4);
  } finally {
    await s.close();
  }
});

test('a batch without gradient signal takes no step and publishes no version; a recent-rewards baseline keeps such a batch', { timeout: 120_000 }, async () => {
  for (const [baseline, expectSkip] of [['batch', true], ['recent', false]] as const) {
    const { s, trainer, judge, status } = await setUp({ rewardBaseline: baseline, klCoef: 0 });
    try {
      // a mixed first batch, then four failures in a row
      for (const [c, v] of (['+', '-', '-', '-', '-', '-', '-', '-'] as const).entries()) await conversation(s, c, v);
      await judge.tick();
      await trainer.buildSamples();
      await trainer.tick();
      const ids = s.store.turns().filter((t) => t.idx === 0).map((t) => t.id);
      assert.deepEqual(ids.slice(0, 4).map(status), Array(4).fill('trained'), `${baseline}: the mixed batch trains`);
      const published = (s.store.sql(`SELECT COUNT(*) AS n FROM weights_versions WHERE source = 'step'`).get() as { n: number }).n;
      if (expectSkip) {
        assert.deepEqual(ids.slice(4).map(status), Array(4).fill('skipped'), 'four equal rewards minus their mean: nothing to learn');
        assert.equal(trainer.step, 1);
        assert.equal(published, 1, 'no version for the no-op step');
        assert.equal(trainer.noOpSteps, 1);
        assert.match(trainer.metrics(), /openclaw_rl_train_noop_steps_total 1\n/);
        const reason = (s.store.sql('SELECT reason FROM samples WHERE turn_id = ?').get(ids[4]) as { reason: string }).reason;
        assert.match(reason, /no learning signal/);
      } else {
        assert.deepEqual(ids.slice(4).map(status), Array(4).fill('trained'), 'against the recent mean (−0.75) the failures still push down');
        assert.equal(trainer.step, 2);
        assert.equal(published, 2);
      }
    } finally {
      await s.close();
    }
  }
});

test('the at-least-one rule: a session\'s neutral first turn becomes a zero-advantage sample only when keepNeutral is on', { timeout: 120_000 }, async () => {
  for (const keepNeutral of [true, false]) {
    const { s, trainer, judge } = await setUp({ keepNeutral });
    try {
      await conversation(s, 0, '0');
      await judge.tick();
      await trainer.buildSamples();
      const row = s.store.sql('SELECT kind, status FROM samples').get() as { kind: string; status: string };
      assert.deepEqual([row.kind, row.status], keepNeutral ? ['neutral', 'pending'] : ['none', 'none']);
    } finally {
      await s.close();
    }
  }
});

test('anchor answers: a batch sampled two or more versions back is joined by the current weights\' answers to its prompts, which carry only the KL term', { timeout: 120_000 }, async () => {
  for (const klCoef of [0.3, 0]) {
    const lines: string[] = [];
    const tokensOf: number[] = [];
    const { s, trainer, judge } = await setUp({ rewardBaseline: 'none', klCoef, entropyGuard: 0, hindsight: false, anchorAnswers: 2, log: (l) => lines.push(l), onStep: (r) => { tokensOf.push(r.tokens!); } });
    try {
      // twelve turns served by version 0: three batches, trained by versions 0, 1 and 2
      for (let c = 0; c < 12; c++) await conversation(s, c, c % 3 ? '-' : '+');
      await judge.tick();
      await trainer.buildSamples();
      const batches = [0, 4, 8].map((offset) => (s.store.sql(`SELECT t.response_ids FROM samples x JOIN turns t ON t.id = x.turn_id ORDER BY t.id LIMIT 4 OFFSET ${offset}`).all() as { response_ids: string }[])
        .reduce((a, t) => a + (JSON.parse(t.response_ids) as number[]).length, 0));
      await trainer.tick();
      assert.equal(trainer.step, 3);
      const steps = lines.filter((l) => /trainer: step \d/.test(l));
      // the first batch was sampled by the weights it trains, the second one version back (the text of a step ago):
      // no anchors, their own tokens only
      for (const k of [0, 1]) {
        assert.doesNotMatch(steps[k], /anchor/);
        assert.equal(tokensOf[k], batches[k]);
      }
      assert.match(steps[1], /1\.0 versions behind/);
      if (klCoef > 0) {
        // the third is two versions back: two anchor answers (up to 16 tokens each, as long as the answers they stand beside) join it
        assert.match(steps[2], /2\.0 versions behind .*, 2 anchor answer\(s\)/);
        assert.ok(tokensOf[2] > batches[2] && tokensOf[2] <= batches[2] + 2 * 16, `${tokensOf[2]} tokens against the batch's ${batches[2]}`);
      } else {
        // with no KL or entropy term an anchor would carry nothing: none is drawn
        assert.doesNotMatch(steps[2], /anchor/);
        assert.equal(tokensOf[2], batches[2]);
      }
    } finally {
      await s.close();
    }
  }
});
