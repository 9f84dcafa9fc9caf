// The tracking flags of the real `openclaw-rl serve` process: --eval-file/--eval-every (held-out
// evaluation at start and after each step, in metrics.jsonl and on the dashboard), --tensorboard, then
// `status` (sparklines) and `report` (SVG charts) on what it wrote; a bad eval file stops serve at once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STORIES, tempDir } from '../helpers/models.ts';
import { post } from '../helpers/server.ts';
import { stopProcess } from '../helpers/processes.ts';

const run = promisify(execFile);
const BIN = fileURLToPath(new URL('../../bin/openclaw-rl.js', import.meta.url));

async function waitFor<T>(what: string, f: () => Promise<T | undefined> | T | undefined, ms = 120_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('serve --eval-file --eval-every 1 --tensorboard: evaluations at start and after each step land in metrics.jsonl, TensorBoard and the dashboard; status and report show them', { timeout: 300_000 }, async () => {
  const t = tempDir('ocrl-serve-eval-');
  const evalFile = join(t.dir, 'prompts.jsonl');
  writeFileSync(evalFile, [
    JSON.stringify({ prompt: 'Once upon a time, a little', criteria: 'a story about a dog', satisfied: { includes: ['dog'] } }),
    JSON.stringify({ prompt: 'Sam and Max', satisfied: { minWords: 3 } }),
  ].join('\n') + '\n');
  const data = join(t.dir, 'data'), tb = join(t.dir, 'tb');
  const child = spawn(process.execPath, [BIN, 'serve', '--model', STORIES, '--data-dir', data, '--port', '0', '--judge', 'lexical', '--method', 'binary',
    '--batch-size', '2', '--eval-file', evalFile, '--eval-every', '1', '--eval-samples', '2', '--eval-max-tokens', '12', '--tensorboard', tb], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => { err += c.toString(); });
  try {
    const url = await waitFor('the server', () => /at (http:\/\/[^ ]+)\/v1/.exec(err)?.[1]);
    assert.match(err, /dashboard: http:\/\/127\.0\.0\.1:\d+\//);
    const metrics = () => existsSync(join(data, 'metrics.jsonl')) ? readFileSync(join(data, 'metrics.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
    // the starting point of the curve: an evaluation of version 0
    const first = await waitFor('the first evaluation', () => metrics().find((l) => l.event === 'eval'));
    assert.deepEqual({ step: first.step, version: first.version, prompts: first.prompts, samples: first.samples }, { step: 0, version: 0, prompts: 2, samples: 4 });
    assert.equal(typeof first.judgeScoreMean, 'number');
    assert.ok(first.ruleSatisfaction >= 0 && first.ruleSatisfaction <= 1);
    // two conversations with feedback make one step, and an evaluation of the new version follows
    for (let c = 0; c < 2; c++) {
      const h = { 'x-session-id': `s${c}` };
      const a = await post(`${url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [{ role: 'user', content: 'Once upon a time' }], max_tokens: 12, seed: c }, h);
      assert.equal(a.status, 200, a.text);
      await post(`${url}/v1/chat/completions`, { model: 'stories260k-hf', messages: [{ role: 'user', content: 'Once upon a time' }, { role: 'assistant', content: a.json.choices[0].message.content }, { role: 'user', content: c ? 'I love it!' : 'No, I wanted a story about a dog.' }], max_tokens: 4 }, { ...h, 'x-session-done': '1' });
    }
    const after = await waitFor('an evaluation after step 1', () => metrics().find((l) => l.event === 'eval' && l.step === 1));
    assert.equal(after.version, 1);
    assert.ok(metrics().some((l) => l.event === 'step' && l.step === 1 && l.status === 'published'));
    const live = await (await fetch(`${url}/admin/dashboard/live`)).json() as { overview: { evaluation: { runs: number; last: { step: number } } } };
    assert.ok(live.overview.evaluation.runs >= 2);
    assert.equal(live.overview.evaluation.last.step, 1);
    // TensorBoard: one event file with the evaluation tags
    const files = readdirSync(tb);
    assert.equal(files.length, 1);
    assert.ok(readFileSync(join(tb, files[0])).includes(Buffer.from('eval/rule_satisfaction')));
    // status prints the curve as sparklines
    const status = await run(process.execPath, [BIN, 'status', '--url', url]);
    assert.match(status.stdout, /policy version 1/);
    assert.match(status.stdout, /reward mean [▁▂▃▄▅▆▇█]+ +last/);
    assert.match(status.stdout, /held-out +[▁▂▃▄▅▆▇█ ]+ +last: judge/);
    // report renders the data folder as SVG charts
    const out = join(t.dir, 'report');
    await run(process.execPath, [BIN, 'report', '--data-dir', data, '--out', out]);
    assert.ok(existsSync(join(out, 'reward.svg')) && existsSync(join(out, 'loss.svg')) && existsSync(join(out, 'index.html')));
    assert.match(readFileSync(join(out, 'reward.svg'), 'utf8'), /held-out rule rate/);
  } finally {
    await stopProcess(child, 'SIGTERM');
    t.cleanup();
  }
});

test('serve refuses a bad eval file before loading the model, naming the line', { timeout: 60_000 }, async () => {
  const t = tempDir('ocrl-serve-eval-bad-');
  try {
    writeFileSync(join(t.dir, 'bad.jsonl'), '{"prompt": "ok"}\n{"satisfied": {"includes": ["dog"]}}\n');
    await assert.rejects(run(process.execPath, [BIN, 'serve', '--model', STORIES, '--data-dir', join(t.dir, 'd'), '--eval-file', join(t.dir, 'bad.jsonl')]),
      (e: { code: number; stderr: string }) => e.code === 2 && /--eval-file: .*bad\.jsonl line 2 needs "prompt"/.test(e.stderr) && !/loading/.test(e.stderr));
  } finally {
    t.cleanup();
  }
});
