// Fluency math: mean log-likelihood, percentiles, the band from the base's own samples, the repetition check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { meanLogLikelihood, percentile, fluencyBand, repetitionCheck, isFluent, repeatLimit } from '../../src/learn/fluency.ts';

test('mean log-likelihood is the per-token mean; an empty sample is −Infinity', () => {
  const table: [number[], number][] = [[[-1, -2, -3], -2], [[-0.5], -0.5], [[0, 0, -4, -4], -2], [[], -Infinity]];
  for (const [lp, want] of table) assert.equal(meanLogLikelihood(lp), want, JSON.stringify(lp));
});

test('percentile interpolates between order statistics and ignores non-finite values', () => {
  const table: [number[], number, number][] = [
    [[1, 2, 3, 4, 5], 0, 1], [[1, 2, 3, 4, 5], 1, 5], [[5, 1, 3, 2, 4], 0.5, 3], [[1, 2, 3, 4, 5], 0.25, 2],
    [[0, 10], 0.05, 0.5], [[-3, -Infinity, -1, -2], 0.5, -2], [[7], 0.05, 7],
  ];
  for (const [v, p, want] of table) assert.ok(Math.abs(percentile(v, p) - want) < 1e-12, `${JSON.stringify(v)} p=${p}: ${percentile(v, p)} ≠ ${want}`);
  assert.throws(() => percentile([], 0.5), /no finite values/);
  assert.throws(() => percentile([1], 1.5), /\[0, 1\]/);
});

test('the band is the 5th percentile of the base samples by default', () => {
  const means = Array.from({ length: 21 }, (_, i) => -3 + i * 0.1); // −3.0 … −1.0
  const band = fluencyBand(means);
  assert.ok(Math.abs(band.lower - -2.9) < 1e-12, String(band.lower));
  assert.equal(band.percentile, 0.05);
  assert.equal(band.calibrationSamples, 21);
  assert.ok(Math.abs(fluencyBand(means, 0.5).lower - -2) < 1e-12);
});

test('repetition check: token n-gram counts and runs of one character', () => {
  const table: [number[], string, boolean, number, number][] = [
    [[1, 2, 3, 4, 5, 6], 'Once upon a time', true, 1, 1],
    [[1, 2, 3, 1, 2, 3, 1, 2, 3], 'a b c a b c a b c', true, 3, 1],
    [[1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3], 'loop loop loop loop', false, 4, 2],
    [[9, 9, 9, 9, 9], 'lllll', true, 3, 5],
    [[9, 9, 9, 9, 9, 9], 'llllll', false, 4, 6],
    [[1, 2], 'llllll', false, 0, 6],
    [[1, 2], 'vedvedved,,, lived', true, 0, 3],
    [[1, 2], 'a      b', true, 0, 1],
    [[], '', true, 0, 0],
  ];
  for (const [ids, text, ok, ngram, run] of table) {
    const r = repetitionCheck(ids, text);
    assert.deepEqual([r.ok, r.maxNgramCount, r.longestCharRun], [ok, ngram, run], `${JSON.stringify(text)} ${JSON.stringify(ids)}`);
  }
  assert.equal(repetitionCheck([1, 1, 1, 1], 'x', { n: 1, maxRepeats: 4, maxCharRun: 5 }).ok, true);
  assert.equal(repetitionCheck([1, 1, 1, 1, 1], 'x', { n: 1, maxRepeats: 4, maxCharRun: 5 }).ok, false);
});

test('fluent means inside the band and free of loops', () => {
  const band = { lower: -2.5, percentile: 0.05, calibrationSamples: 100 };
  const clean = { ok: true, maxNgramCount: 1, longestCharRun: 1 }, loop = { ok: false, maxNgramCount: 9, longestCharRun: 1 };
  const table: [number, typeof clean, boolean][] = [[-2, clean, true], [-2.5, clean, true], [-2.51, clean, false], [-1, loop, false], [-Infinity, clean, false]];
  for (const [ll, rep, want] of table) assert.equal(isFluent(ll, band, rep), want, `${ll} ${rep.ok}`);
});

test('the repetition limit of a band: the 95th percentile of the base samples\' counts, rounded up, never below 3', () => {
  const table: [number[], number, number][] = [
    [[], 0.05, 3], // no samples: the fixed limit
    [[1, 2, 2, 3, 3], 0.05, 3], // the base never repeats more than the fixed limit allows
    [[...Array(18).fill(2), 4, 5], 0.05, 5], // 95th percentile of 20: between 4 and 5 → 5
    [[...Array(19).fill(2), 6], 0.05, 3], // one loop in 20: at the 95th percentile the count is 2.2 → 3, the floor
    [[...Array(85).fill(3), ...Array(15).fill(4)], 0.05, 4], // 15% at 4 (stories about a dog) → 4
    [[...Array(85).fill(3), ...Array(15).fill(4)], 0.2, 3], // a looser percentile keeps the floor
  ];
  for (const [counts, p, want] of table) assert.equal(repeatLimit(counts, p), want, JSON.stringify([counts.length, p]));
  assert.equal(repeatLimit([9, 9], 0.05, 2), 9);
});
