// The prefill pacer (src/engine/embedded/prefill-pacer.ts) against simulated step costs: decoders
// keep their share of idle speed whether prompt rows are cheap or cost more than a whole decode step
// (long positions), the prompt still finishes, background scoring is paid from the same credit, and
// with nothing decoding prompts take full chunks; a background step takes the rows that fit its target time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { BackgroundStep, PrefillPacer } from '../../src/engine/embedded/prefill-pacer.ts';

interface Case { name: string; decodeMs: number; rowMs: (position: number) => number; batchSaving: number; promptRows: number; share: number }

/** Run a prompt of `promptRows` beside one decoder; returns the decoder's speed relative to idle, and steps taken. */
function simulate(c: Case, background?: { everySteps: number; ms: number }): { ratio: number; steps: number; fed: number } {
  const p = new PrefillPacer({ maxChunk: 256, decodeShare: c.share });
  // warm up: decode-only steps, as before a new prompt arrives
  for (let i = 0; i < 5; i++) p.step(c.decodeMs, 1, p.rows(true));
  let fed = 0, time = 0, tokens = 0, steps = 0;
  while (fed < c.promptRows && steps < 1e6) {
    const rows = Math.min(p.rows(true), c.promptRows - fed);
    let ms = c.decodeMs;
    // rows in one step share the weight reads: a little cheaper each than alone
    for (let r = 0; r < rows; r++) ms += c.rowMs(fed + r) * (r === 0 ? 1 : c.batchSaving);
    p.step(ms, 1, rows);
    fed += rows; time += ms; tokens++; steps++;
    if (background && steps % background.everySteps === 0) { p.background(background.ms); time += background.ms; }
  }
  return { ratio: (tokens / time) * c.decodeMs, steps, fed };
}

const CASES: Case[] = [
  { name: 'cheap rows (135M shape, short prompt)', decodeMs: 18, rowMs: () => 4, batchSaving: 0.7, promptRows: 3000, share: 0.6 },
  { name: 'rows dearer at long positions (135M, 10K prompt)', decodeMs: 18, rowMs: (q) => 4 + q * 0.004, batchSaving: 0.9, promptRows: 10_000, share: 0.6 },
  { name: 'one row costs more than a decode step (0.6B, 10K prompt)', decodeMs: 80, rowMs: (q) => 15 + q * 0.02, batchSaving: 0.95, promptRows: 10_000, share: 0.6 },
  { name: 'a higher share asked', decodeMs: 18, rowMs: (q) => 4 + q * 0.004, batchSaving: 0.9, promptRows: 5000, share: 0.8 },
];

for (const c of CASES) {
  test(`decoders keep their share of idle speed during a long prefill: ${c.name}`, () => {
    const r = simulate(c);
    assert.equal(r.fed, c.promptRows, 'the prompt is fed completely');
    assert.ok(r.ratio >= c.share - 0.05, `decode at ${(100 * r.ratio).toFixed(1)}% of idle, asked ${100 * c.share}%`);
    // and prompts are not starved: the share given to them is mostly used
    assert.ok(r.ratio <= c.share + 0.1, `decode at ${(100 * r.ratio).toFixed(1)}% of idle: the prompt got less than its share`);
  });
}

test('background scoring passes are paid from the same credit, so decoders keep their share with them too', () => {
  const c = CASES[1];
  const r = simulate(c, { everySteps: 3, ms: 30 });
  assert.equal(r.fed, c.promptRows);
  assert.ok(r.ratio >= c.share - 0.05, `decode at ${(100 * r.ratio).toFixed(1)}% of idle`);
});

test('with nothing decoding a prompt takes full chunks, and costs are learnt before any row is mixed in', () => {
  const p = new PrefillPacer({ maxChunk: 64, decodeShare: 0.6 });
  assert.equal(p.rows(false), 64);
  assert.equal(p.rows(true), 0, 'first a decode-only step, to learn its cost');
  p.step(20, 1, 0);
  assert.equal(p.rows(true), 1, 'then one row, to learn what a row adds');
  p.step(26, 1, 1);
  assert.ok(p.rows(true) >= 1);
  assert.equal(p.typicalRows(), Math.floor((20 * 0.4 / 0.6) / 6));
  assert.throws(() => new PrefillPacer({ maxChunk: 8, decodeShare: 1 }), /between 0 and 1/);
});

test('a long decode-only stretch does not buy one huge step later', () => {
  const p = new PrefillPacer({ maxChunk: 256, decodeShare: 0.6 });
  p.step(20, 1, 0);
  p.step(22, 1, 1);
  for (let i = 0; i < 1000; i++) p.step(20, 1, 0);
  const rows = p.rows(true);
  assert.ok(rows * 2 <= 4 * (20 * 0.4 / 0.6) + 2, `${rows} rows after a long decode-only stretch`);
});

test('BackgroundStep: the rows that fit the target time by the learnt cost per row, between 1 and the cap', () => {
  const rows: [string, [number, number][], number][] = [
    // [case, background steps (ms, rows) already run, rows for the next step] — target 500 ms, cap 32
    ['nothing learnt yet: the cap', [], 32],
    ['a tiny model (0.05 ms a row): the cap', [[1.6, 32]], 32],
    ['Qwen3-0.6B at 10K positions (~30 ms a row): 16', [[960, 32]], 16],
    ['a row dearer than the target: still one row', [[2_000, 1]], 1],
    ['the cost moves halfway towards each new step', [[960, 32], [320, 32]], 25],
  ];
  for (const [name, steps, want] of rows) {
    const b = new BackgroundStep(500, 32);
    for (const [ms, n] of steps) b.ran(ms, n);
    assert.equal(b.rows(), want, name);
  }
  assert.throws(() => new BackgroundStep(0, 32), RangeError);
  assert.throws(() => new BackgroundStep(500, 0), RangeError);
});
