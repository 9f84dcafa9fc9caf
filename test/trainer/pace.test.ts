// The training pace (bounded off-policyness): when a new main turn must wait for the trainer, and that
// a wait ends when the trainer catches up, when the client leaves, or at the longest wait — never later.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mustWait, TrainingPace } from '../../src/trainer/pace.ts';

test('mustWait: more than maxLag full batches wait, the one in training included', () => {
  const cases: [backlog: number, maxLag: number, batch: number, wait: boolean][] = [
    [0, 0, 8, false], [7, 0, 8, false], [8, 0, 8, true], [20, 0, 8, true],
    [8, 1, 8, false], [15, 1, 8, false], [16, 1, 8, true],
    [23, 2, 8, false], [24, 2, 8, true], [1, 0, 1, true], [0, 3, 1, false],
  ];
  for (const [backlog, maxLag, batch, wait] of cases) assert.equal(mustWait(backlog, maxLag, batch), wait, `backlog ${backlog}, lag ${maxLag}, batch ${batch}`);
});

test('a turn under the limit goes at once; one over it waits for the trainer, and goes when a step brings the backlog down', async () => {
  let backlog = 3;
  const pace = new TrainingPace(() => backlog, { maxLagBatches: 0, batchSize: 4, maxWaitMs: 10_000, pollMs: 10_000 });
  assert.equal(await pace.wait(), 0);
  backlog = 4;
  let went = false;
  const waiting = pace.wait().then((ms) => { went = true; return ms; });
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(went, false);
  assert.equal(pace.waiting, 1);
  pace.wake(); // a wake with the backlog still full changes nothing
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(went, false);
  backlog = 0; // the step trained the batch
  pace.wake();
  const ms = await waiting;
  assert.ok(ms >= 40, `waited ${ms} ms`);
  assert.equal(pace.waiting, 0);
  assert.deepEqual({ held: pace.counts.held, timedOut: pace.counts.timedOut }, { held: 1, timedOut: 0 });
});

test('without a wake, a waiting turn looks again every pollMs', async () => {
  let backlog = 10;
  const pace = new TrainingPace(() => backlog, { maxLagBatches: 1, batchSize: 4, maxWaitMs: 10_000, pollMs: 20 });
  const waiting = pace.wait();
  setTimeout(() => { backlog = 7; }, 60);
  const ms = await waiting;
  assert.ok(ms >= 50 && ms < 5000, `waited ${ms} ms`);
});

test('a backlog the trainer cannot clear costs one wait of maxWaitMs, not one per turn: the pace stands aside until it is back under the bound', async () => {
  let backlog = 100;
  const told: number[] = [];
  const pace = new TrainingPace(() => backlog, { maxLagBatches: 0, batchSize: 8, maxWaitMs: 80, pollMs: 10 }, (b) => told.push(b));
  // two turns wait together; the first to reach the limit lets the other go with it
  const [a, b] = await Promise.all([pace.wait(), new Promise<number>((r) => setTimeout(() => r(pace.wait()), 30))]);
  assert.ok(a >= 70 && a < 2000, `waited ${a} ms`);
  assert.ok(b < a, `the second waited ${b} ms`);
  assert.deepEqual(told, [100]);
  assert.equal(pace.standsAside, true);
  assert.equal(pace.waiting, 0);
  // while it stands aside, turns go at once
  assert.equal(await pace.wait(), 0);
  assert.equal(await pace.wait(), 0);
  assert.deepEqual({ timedOut: pace.counts.timedOut, passed: pace.counts.passed }, { timedOut: 1, passed: 2 });
  assert.equal(pace.status().standingAside, 1);
  assert.match(pace.metrics(), /^openclaw_rl_pace_timed_out_total 1$/m);
  assert.match(pace.metrics(), /^openclaw_rl_pace_standing_aside 1$/m);
  assert.match(pace.metrics(), /^openclaw_rl_pace_passed_turns_total 2$/m);
  assert.match(pace.metrics(), /^openclaw_rl_pace_waiting 0$/m);
  // the trainer catches up: the bound holds again
  backlog = 3;
  assert.equal(await pace.wait(), 0);
  assert.equal(pace.standsAside, false);
  backlog = 8;
  const held = pace.wait();
  await new Promise((r) => setTimeout(r, 30));
  assert.equal(pace.waiting, 1);
  backlog = 0;
  pace.wake();
  assert.ok(await held >= 20);
  assert.equal(pace.standsAside, false);
});

test('a client that leaves stops waiting at once', async () => {
  const pace = new TrainingPace(() => 100, { maxLagBatches: 0, batchSize: 8, maxWaitMs: 10_000 });
  const left = new AbortController();
  const waiting = pace.wait(left.signal);
  setTimeout(() => left.abort(), 30);
  const ms = await waiting;
  assert.ok(ms < 5000);
  assert.equal(pace.waiting, 0);
  assert.equal(pace.counts.timedOut, 0);
});

test('the lag is a whole number of batches ≥ 0', () => {
  for (const bad of [-1, 0.5, Number.NaN]) assert.throws(() => new TrainingPace(() => 0, { maxLagBatches: bad, batchSize: 8, maxWaitMs: 1000 }), /whole number of batches/);
  assert.doesNotThrow(() => new TrainingPace(() => 0, { maxLagBatches: 0, batchSize: 8, maxWaitMs: 1000 }));
});
