// bench load, briefly: a real serve child under a few concurrent streaming sessions with training
// on, its `llm` judge against the benchmark's stand-in endpoint, taken down for a few seconds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, existsSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchLoad, keptDataDir, percentile } from '../../src/bench/load.ts';
import { nextStateOf, startJudgeEndpoint } from '../../src/bench/judge-endpoint.ts';
import { judgePrompts } from '../../src/judge/prompts.ts';
import { STORIES } from '../helpers/models.ts';

test('percentile: nearest rank', () => {
  const xs = Array.from({ length: 100 }, (_, i) => i + 1);
  assert.equal(percentile(xs, 50), 50);
  assert.equal(percentile(xs, 99), 99);
  assert.equal(percentile([5], 99), 5);
  assert.ok(Number.isNaN(percentile([], 50)));
});

test('the stand-in judge endpoint reads the next state out of the real judge prompts and answers in the OpenAI wire format', async () => {
  const input = { response: 'Once upon a time there was a cat.', nextState: { role: 'user' as const, text: 'No, I wanted a story about a dog.', looksLikeError: false } };
  for (const style of ['full', 'compact'] as const) {
    const p = judgePrompts(style);
    assert.equal(nextStateOf(p.prm(input).at(-1)!.content), input.nextState.text, style);
    assert.equal(nextStateOf(p.hint(input).at(-1)!.content), input.nextState.text, style);
  }
  const ep = await startJudgeEndpoint();
  try {
    const ask = async (messages: { role: string; content: string }[]) => {
      const r = await fetch(`${ep.url}/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'x', messages }) });
      return { status: r.status, body: await r.json() as { choices?: { message: { content: string } }[] } };
    };
    const prm = await ask(judgePrompts('full').prm(input));
    assert.equal(prm.body.choices![0].message.content, '\\boxed{-1}');
    const hint = await ask(judgePrompts('full').hint(input));
    assert.match(hint.body.choices![0].message.content, /^\\boxed\{1\}\n\[HINT_START\]The user wants a story about a dog\.\[HINT_END\]$/);
    ep.down = true;
    assert.equal((await ask(judgePrompts('full').prm(input))).status, 503);
    assert.equal(ep.refused, 1);
  } finally {
    await ep.close();
  }
});

test('keptDataDir: a new or empty folder is used, a folder with files in it is refused', () => {
  const root = mkdtempSync(join(tmpdir(), 'ocrl-keep-'));
  try {
    assert.equal(keptDataDir(join(root, 'new', 'run')), join(root, 'new', 'run'));
    assert.ok(existsSync(join(root, 'new', 'run')));
    assert.equal(keptDataDir(join(root, 'new', 'run')), join(root, 'new', 'run'), 'empty: used');
    writeFileSync(join(root, 'new', 'run', 'openclaw-rl.sqlite'), '');
    assert.throws(() => keptDataDir(join(root, 'new', 'run')), /not empty/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('bench load: streaming sessions against the real server with a judge outage; nothing fails, the backlog is judged and trained after it', { timeout: 180_000 }, async () => {
  const kept = join(mkdtempSync(join(tmpdir(), 'ocrl-keep-')), 'run');
  const r = await benchLoad({
    model: STORIES, sessions: 4, seconds: 8, maxTokens: 8, outage: { startSeconds: 2, seconds: 4 }, drainSeconds: 60,
    serveArgs: ['--batch-size', '2', '--max-concurrent', '2'], keepData: kept,
  });
  // --keep-data: the store and the server's whole log stay
  assert.ok(existsSync(join(kept, 'openclaw-rl.sqlite')));
  assert.match(readFileSync(join(kept, 'serve.log'), 'utf8'), /trainer: step 1 → version/);
  rmSync(join(kept, '..'), { recursive: true, force: true });
  assert.equal(r.failed, 0, JSON.stringify(r.failures));
  assert.ok(r.requests >= 8, `${r.requests} requests`);
  assert.ok(r.latencyMs.p99 >= r.latencyMs.p50 && r.latencyMs.p50 > 0);
  assert.ok(r.rssMiB.max >= r.rssMiB.start && r.rssMiB.start > 10);
  assert.ok(r.outage!.refused > 0, 'the judge was asked during the outage and refused');
  const d = r.afterDrain;
  assert.ok(d.signalTurns >= 4, `${d.signalTurns} turns with feedback`);
  assert.equal(d.judged, d.signalTurns, 'every turn with feedback judged after the outage');
  // a batch of 2 can leave one sample waiting; samples of no-op batches are consumed but not trained
  const consumed = d.judgedAndTrained + (d.samples.skipped ?? 0) + (d.samples.pending ?? 0);
  assert.ok(consumed >= d.signalTurns - 1, JSON.stringify(d));
  assert.ok(Number.isFinite(d.judgeLagSeconds.max) && d.judgeLagSeconds.max >= 1, 'turns paired during the outage waited for it');
  assert.equal(d.samples.stale ?? 0, 0, 'nothing dropped as stale');
});
