// Hand-computed cases for every advantage rule (src/learn/advantages.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { overlongPenalty, buildSample, atLeastOneSample, groupNormalise } from '../../src/learn/advantages.ts';

test('overlong shaping: the seed examples (L_max 1000, L_cache 200) and the ramp edges', () => {
  const table: [number, number][] = [[700, 0], [800, 0], [900, -0.5], [950, -0.75], [1000, -1], [1100, -1], [0, 0]];
  for (const [len, expected] of table) assert.equal(overlongPenalty(len, 1000, 200), expected, `length ${len}`);
});

test('binary: A = r on every token; r = 0 or no judgement → no sample', () => {
  const behaviour = [-1, -2, -0.5];
  assert.deepEqual(buildSample('binary', { reward: 1, teacher: null, behaviour }), { advantages: [1, 1, 1], lossMask: [1, 1, 1], kind: 'binary' });
  assert.deepEqual(buildSample('binary', { reward: -1, teacher: [0, 0, 0], behaviour }), { advantages: [-1, -1, -1], lossMask: [1, 1, 1], kind: 'binary' });
  assert.equal(buildSample('binary', { reward: 0, teacher: null, behaviour }), null);
  assert.equal(buildSample('binary', { reward: null, teacher: null, behaviour }), null);
  // a shaped reward is used as is
  assert.deepEqual(buildSample('binary', { reward: -0.5, teacher: null, behaviour })!.advantages, [-0.5, -0.5, -0.5]);
});

test('opd: A = clip(teacher − behaviour, ±1) on each token; no hint → no sample', () => {
  assert.deepEqual(buildSample('opd', { reward: -1, teacher: [-0.5, -1, -3], behaviour: [-1, -2, -0.5] }, undefined, Infinity), { advantages: [0.5, 1, -2.5], lossMask: [1, 1, 1], kind: 'opd' });
  // upstream's clip: teacher − behaviour at ±1 (the −2.5 becomes −1; −9 nats on a first token would become −1)
  assert.deepEqual(buildSample('opd', { reward: -1, teacher: [-0.5, -1, -3, -10], behaviour: [-1, -2, -0.5, -1] })!.advantages, [0.5, 1, -1, -1]);
  assert.equal(buildSample('opd', { reward: 1, teacher: null, behaviour: [-1] }), null);
  assert.throws(() => buildSample('opd', { reward: 1, teacher: [-1, -1], behaviour: [-1] }), /differ in length/);
});

test('combine: w_opd·(teacher − behaviour) + w_rl·r; one signal alone is used; neither → no sample', () => {
  const behaviour = [-1, -2];
  assert.deepEqual(buildSample('combine', { reward: -1, teacher: [-0.5, -2.5], behaviour })!.advantages, [-0.5, -1.5]);
  assert.deepEqual(buildSample('combine', { reward: 1, teacher: [-0.5, -2.5], behaviour }, { opd: 2, rl: 0.5 })!.advantages, [1.5, -0.5]);
  assert.deepEqual(buildSample('combine', { reward: 1, teacher: null, behaviour }), { advantages: [1, 1], lossMask: [1, 1], kind: 'binary' });
  assert.deepEqual(buildSample('combine', { reward: 0, teacher: [-0.5, -2.5], behaviour }), { advantages: [0.5, -0.5], lossMask: [1, 1], kind: 'opd' });
  assert.equal(buildSample('combine', { reward: 0, teacher: null, behaviour }), null);
});

test('at-least-one sample has zero advantages; group normalisation centres and scales', () => {
  assert.deepEqual(atLeastOneSample(3), { advantages: [0, 0, 0], lossMask: [1, 1, 1], kind: 'binary' });
  const g = groupNormalise([1, -1, 1, -1]);
  for (const [i, e] of [1, -1, 1, -1].entries()) assert.ok(Math.abs(g[i] - e) < 1e-5);
  assert.deepEqual(groupNormalise([1, 1, 1]), [0, 0, 0]);
  assert.deepEqual(groupNormalise([1]), [0]);
});

test('top-K mode samples: token advantages carry only the reward (the set carries the teacher), by method and signals', async () => {
  const { topkSample } = await import('../../src/learn/advantages.ts');
  const table: [Parameters<typeof topkSample>[0], number | null, boolean, { advantages: number[]; kind: string } | null][] = [
    ['opd', -1, true, { advantages: [0, 0], kind: 'opd' }],
    ['opd', 1, false, null],
    ['combine', -1, true, { advantages: [-1, -1], kind: 'combine' }],
    ['combine', 0, true, { advantages: [0, 0], kind: 'opd' }],
    ['combine', 1, false, { advantages: [1, 1], kind: 'binary' }],
    ['combine', null, false, null],
    ['binary', -1, true, { advantages: [-1, -1], kind: 'binary' }],
    ['binary', 0, true, null],
  ];
  for (const [method, reward, hints, expected] of table) {
    const s = topkSample(method, reward, hints, 2, 1);
    assert.deepEqual(s && { advantages: s.advantages, kind: s.kind }, expected, `${method} r=${reward} hints=${hints}`);
  }
  assert.deepEqual(topkSample('combine', -1, true, 1, 0.5)!.advantages, [-0.5]);
});
