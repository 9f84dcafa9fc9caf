// Hand-computed cases for top-K OPD (src/learn/topk-opd.ts): set weights, clipped advantages, the PPO
// surrogate summed over the set, overlaps and the three hint selections.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setWeights, setAdvantages, topkToken, overlap, chooseCandidates, topkTargets, clip, mixedAdvantages, joinSet, agreeingAdvantages } from '../../src/learn/topk-opd.ts';

const close = (a: number[], b: number[], msg = '') => {
  assert.equal(a.length, b.length, msg);
  a.forEach((x, i) => assert.ok(Math.abs(x - b[i]) < 1e-9, `${msg} [${i}]: ${x} vs ${b[i]}`));
};
const old = [0.5, 0.25, 0.125, 0.125].map(Math.log);

test('set weights are softmax of the old log-probs over the set (they sum to 1, whatever the rest of the vocabulary holds)', () => {
  close(setWeights(old), [0.5, 0.25, 0.125, 0.125]);
  // log-probs of a set that covers only 40% of the mass renormalise the same way
  close(setWeights([0.2, 0.1, 0.05, 0.05].map(Math.log)), [0.5, 0.25, 0.125, 0.125]);
  close(setWeights([-1, -1]), [0.5, 0.5]);
  assert.deepEqual(setWeights([]), []);
});

test('set advantages: clip(teacher − old, ±1) · w_v', () => {
  // teacher − old = −2, +0.5, +3, 0 → clipped −1, 0.5, 1, 0 → times 0.5, 0.25, 0.125, 0.125
  const teacher = [old[0] - 2, old[1] + 0.5, old[2] + 3, old[3]];
  close(setAdvantages(teacher, old, 1), [-0.5, 0.125, 0.125, 0]);
  // a wider clip lets the +3 through: 3 · 0.125
  close(setAdvantages(teacher, old, 2), [-1, 0.125, 0.25, 0]);
  assert.throws(() => setAdvantages([0], old, 1), /differ in length/);
  const table: [number, number, number][] = [[-9, 1, -1], [0.3, 1, 0.3], [1.5, 1, 1], [-1.5, 2, -1.5]];
  for (const [x, c, e] of table) assert.equal(clip(x, c), e);
});

test('the top-K loss at ratio 1 is −Σ A_v and its gradient −A_v per entry', () => {
  const A = [-0.5, 0.125, 0.125, 0];
  const r = topkToken(old, old, A, 0.2, 0.28);
  assert.ok(Math.abs(r.loss - 0.25) < 1e-12);
  close(r.dlogp, [0.5, -0.125, -0.125, 0]);
  assert.equal(r.clipped, 0);
});

test('the top-K loss clips each entry at 0.2 / 0.28 and sums the set (hand-computed)', () => {
  const A = [-0.5, 0.125, 0.125, 0];
  // ρ = 0.5, 1.5, 1.1, 1
  const cur = [old[0] + Math.log(0.5), old[1] + Math.log(1.5), old[2] + Math.log(1.1), old[3]];
  const r = topkToken(cur, old, A, 0.2, 0.28);
  // v0: min(0.5·−0.5, 0.8·−0.5) = −0.4 → loss 0.4, clipped; v1: min(1.5·0.125, 1.28·0.125) = 0.16 → −0.16, clipped;
  // v2: 1.1·0.125 = 0.1375 inside the range → −0.1375 with gradient −1.1·0.125; v3: A = 0
  assert.ok(Math.abs(r.loss - (0.4 - 0.16 - 0.1375)) < 1e-12, `loss ${r.loss}`);
  close(r.dlogp, [0, 0, -0.1375, 0]);
  assert.equal(r.clipped, 2);
});

test('overlap counts the student ids the teacher top-K also holds', () => {
  const table: [number[], number[], number][] = [[[1, 2, 3, 4], [4, 5, 1, 9], 2], [[1, 2], [3, 4], 0], [[7, 8, 9, 10], [10, 9, 8, 7], 4], [[1, 1, 2], [1], 1]];
  for (const [s, t, e] of table) assert.equal(overlap(s, t), e, `${s} ∩ ${t}`);
});

test('hint selection: shortest, token_optimal (argmax per token) and sequence_optimal (argmax of the sum, ties to the shorter hint)', () => {
  const O = [[1, 2, 3], [4, 0, 0], [2, 2, 2]]; // sums 6, 4, 6
  assert.deepEqual(chooseCandidates('shortest', O), [0, 0, 0]);
  assert.deepEqual(chooseCandidates('token_optimal', O), [1, 0, 0]);
  assert.deepEqual(chooseCandidates('sequence_optimal', O), [0, 0, 0]);
  assert.deepEqual(chooseCandidates('sequence_optimal', [[0, 1], [2, 1], [3, 0]]), [1, 1]); // sums 1, 3, 3 → the first of the tie
  assert.throws(() => chooseCandidates('shortest', []), /no hint candidates/);
  assert.throws(() => chooseCandidates('token_optimal', [[1], [1, 2]]), /every candidate/);
});

test('topkTargets: the chosen candidate per position, its advantages over the student set, and its overlap', () => {
  const studentIds = [[10, 11, 12, 13], [20, 21, 22, 23]];
  const studentOld = [old, old];
  // candidate 0 agrees on one id per position; candidate 1 on three at t0 and four at t1 → sequence_optimal takes 1
  const c0 = { atStudent: [[old[0] - 2, old[1], old[2], old[3]], [old[0], old[1], old[2], old[3]]], topIds: [[10, 1, 2, 3], [20, 1, 2, 3]] };
  const c1 = { atStudent: [[old[0], old[1] + 0.5, old[2], old[3]], [old[0] + 0.2, old[1], old[2], old[3] - 0.4]], topIds: [[10, 11, 12, 99], [23, 22, 21, 20]] };
  const r = topkTargets(studentIds, studentOld, [c0, c1], 'sequence_optimal', 1);
  assert.deepEqual(r.chosen, [1, 1]);
  assert.deepEqual(r.overlapAtChosen, [3, 4]);
  close(r.advantages[0], [0, 0.125, 0, 0]);
  close(r.advantages[1], [0.1, 0, 0, -0.05]);
  const s = topkTargets(studentIds, studentOld, [c0, c1], 'shortest', 1);
  close(s.advantages[0], [-0.5, 0, 0, 0]);
  assert.deepEqual(s.overlapAtChosen, [1, 1]);
  assert.throws(() => topkTargets(studentIds, studentOld, [{ atStudent: [old], topIds: [[1]] }], 'shortest', 1), /covers 1 positions/);
});

test('joined sets: the student set, then the teacher top-K ids it lacks, with both log-probs at each', () => {
  const j = joinSet([7, 3], [-0.5, -1.5], [-2, -0.7], [3, 9, 11], [-0.7, -0.9, -3], [-1.5, -4, -6]);
  assert.deepEqual(j.ids, [7, 3, 9, 11]);
  assert.deepEqual(j.old, [-0.5, -1.5, -4, -6]);
  assert.deepEqual(j.teacher, [-2, -0.7, -0.9, -3]);
  // a teacher top-K inside the student set adds nothing
  assert.deepEqual(joinSet([1, 2], [-1, -2], [-1, -2], [2, 1], [-2, -1], [-2, -1]).ids, [1, 2]);
  assert.throws(() => joinSet([1], [-1, -2], [-1], [2], [-1], [-1]), /differ in length/);
  assert.throws(() => joinSet([1], [-1], [-1], [2, 3], [-1], [-1, -2]), /differ in length/);
});

test('mixed advantages: clip(teacher − old, ±1) · (softmax(old) + softmax(teacher)) / 2', () => {
  // old over the set 0.5/0.25/0.125/0.125; the teacher puts 0.125/0.125/0.25/0.5
  const teacher = [0.125, 0.125, 0.25, 0.5].map(Math.log);
  // teacher − old = ln(1/4), ln(1/2), ln 2, ln 4 → clipped −1, −0.693…, +0.693…, +1
  const w = [(0.5 + 0.125) / 2, (0.25 + 0.125) / 2, (0.125 + 0.25) / 2, (0.125 + 0.5) / 2];
  close(mixedAdvantages(teacher, old, 1), [-1 * w[0], Math.log(0.5) * w[1], Math.log(2) * w[2], 1 * w[3]]);
  // a token the student almost never writes but the teacher wants gets the teacher's half of the weight,
  // where softmax(old) alone gives it ~0
  const rareOld = [Math.log(0.9), Math.log(1e-4)], rareTeacher = [Math.log(0.1), Math.log(0.85)];
  const mixed = mixedAdvantages(rareTeacher, rareOld, 1), student = setAdvantages(rareTeacher, rareOld, 1);
  assert.ok(student[1] < 2e-4, `${student[1]}`);
  assert.ok(Math.abs(mixed[1] - 0.5 * (1e-4 / 0.9001 + 0.85 / 0.95)) < 1e-9, `${mixed[1]}`);
  assert.throws(() => mixedAdvantages([0], old, 1), /differ in length/);
});

test('agreeingAdvantages: kept where both teachers push the same way, by the smaller (clipped) push; 0 where they disagree', () => {
  // old log-probs 0 at every entry: the gaps are the teachers' log-probs themselves
  const cases: { a: number[]; pol: number[]; base: number[]; c: number; want: number[] }[] = [
    { a: [0.4, 0.2], pol: [0.5, -0.5], base: [0.25, -1], c: 1, want: [0.2, 0.2] }, // same signs: scaled by min/|gp|
    { a: [0.4, -0.2], pol: [0.5, -0.5], base: [-0.1, 0.3], c: 1, want: [0, 0] }, // opposite signs: dropped
    { a: [0.4], pol: [0.5], base: [0], c: 1, want: [0] }, // the base does not move it: dropped
    { a: [0], pol: [0], base: [0.7], c: 1, want: [0] }, // the live teacher does not move it
    { a: [0.6], pol: [3], base: [2], c: 1, want: [0.6] }, // both beyond the clip: the clipped pushes are equal
  ];
  for (const x of cases) {
    const got = agreeingAdvantages(x.a, x.pol, x.base, x.a.map(() => 0), x.c);
    got.forEach((g, i) => assert.ok(Math.abs(g - x.want[i]) < 1e-12, `${JSON.stringify(x)}: ${got}`));
  }
  assert.throws(() => agreeingAdvantages([1], [1, 2], [1], [0], 1), /differ in length/);
});
