// Hand-computed cases for the per-token losses (src/learn/losses.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ppoToken, unlikelihoodToken, UNLIKELIHOOD_MAX_P, k3Token, k2Token, klToken, fullKlRow, entropyExcessRow, crossEntropyToken } from '../../src/learn/losses.ts';

const close = (a: number, b: number, msg: string) => assert.ok(Math.abs(a - b) < 1e-9, `${msg}: ${a} vs ${b}`);

test('PPO clipped surrogate: ratio inside/above/below the clip range with positive and negative advantages', () => {
  const ln = Math.log;
  // [case, logp, behaviour, advantage, expected loss, expected dloss/dlogp, clipped]
  const table: [string, number, number, number, number, number, boolean][] = [
    ['ratio 1, A=+1', -1, -1, 1, -1, -1, false],
    ['ratio 1, A=-1', -1, -1, -1, 1, 1, false],
    ['ratio 1.1 inside, A=+2', ln(1.1), 0, 2, -2.2, -2.2, false],
    ['ratio 1.5 above 1.28, A=+1: clipped, flat', ln(1.5), 0, 1, -1.28, 0, true],
    ['ratio 1.5 above 1.28, A=-1: unclipped branch is the min', ln(1.5), 0, -1, 1.5, 1.5, false],
    ['ratio 0.5 below 0.8, A=-1: clipped, flat', ln(0.5), 0, -1, 0.8, 0, true],
    ['ratio 0.5 below 0.8, A=+1: unclipped', ln(0.5), 0, 1, -0.5, -0.5, false],
    ['ratio 0.9 inside, A=-0.5', ln(0.9), 0, -0.5, 0.45, 0.45, false],
    ['A=0: no loss, no gradient', ln(2), 0, 0, -0, -0, false],
  ];
  for (const [name, logp, b, a, loss, dlogp, clipped] of table) {
    const t = ppoToken(logp, b, a, 0.2, 0.28);
    close(t.loss, loss, `${name} loss`);
    close(t.dlogp, dlogp, `${name} dlogp`);
    assert.equal(t.clipped, clipped, `${name} clipped`);
    close(t.ratio, Math.exp(logp - b), `${name} ratio`);
  }
});

test('PPO gradient equals the numerical derivative of the loss away from the kinks', () => {
  for (const [logp, a] of [[-0.1, 1], [-0.05, -1], [0.2, -2], [-0.3, 0.7]]) {
    const h = 1e-6;
    const num = (ppoToken(logp + h, 0, a, 0.2, 0.28).loss - ppoToken(logp - h, 0, a, 0.2, 0.28).loss) / (2 * h);
    assert.ok(Math.abs(num - ppoToken(logp, 0, a, 0.2, 0.28).dlogp) < 1e-6);
  }
});

test('k3 KL estimator: zero at equal log-probs, positive otherwise, with its derivative', () => {
  const table: [number, number, number][] = [
    // [logp, baseLogp, e^(b-p) - (b-p) - 1]
    [-1, -1, 0],
    [-1, -2, Math.exp(-1) + 1 - 1],
    [-2, -1, Math.exp(1) - 1 - 1],
    [-0.5, -0.7, Math.exp(-0.2) + 0.2 - 1],
  ];
  for (const [p, b, kl] of table) {
    const k = k3Token(p, b);
    close(k.kl, kl, `kl(${p}, ${b})`);
    assert.ok(k.kl >= 0);
    close(k.dlogp, 1 - Math.exp(b - p), `dkl(${p}, ${b})`);
  }
});

test('k2 KL estimator: ½(p − b)², its derivative p − b; the two estimators differ where the policy raised or lowered a token', () => {
  const table: [number, number, number, number][] = [
    // [logp, baseLogp, ½(p−b)², p − b]
    [-1, -1, 0, 0],
    [-1, -3, 2, 2], // the policy made a token the base finds unlikely 7× likelier: pushed back by 2
    [-3, -1, 2, -2], // the policy made a base-likely token 7× less likely: pulled up by 2
    [-0.5, -0.7, 0.02, 0.2],
  ];
  for (const [p, b, kl, d] of table) {
    const k = k2Token(p, b);
    close(k.kl, kl, `k2(${p}, ${b})`);
    close(k.dlogp, d, `dk2(${p}, ${b})`);
    assert.deepEqual(klToken('k2', p, b), k);
    assert.deepEqual(klToken('k3', p, b), k3Token(p, b));
  }
  // k3 caps the push-back on a raised token at 1 and pulls a lowered one up by e^(b−p) − 1 = 6.39; k2 is symmetric
  close(k3Token(-1, -3).dlogp, 1 - Math.exp(-2), 'k3 raised');
  close(k3Token(-3, -1).dlogp, 1 - Math.exp(2), 'k3 lowered');
});

test('k2 in the loss: its expected gradient over tokens drawn from π is that of the reverse KL(π‖π_base)', () => {
  // one position, 3 tokens, π = softmax(z): E_π[dk2/dlogp · ∂logπ/∂z] = ∂/∂z Σ π log(π/b)
  const z = [0.3, -0.2, 0.9], b = [0.5, 0.3, 0.2].map(Math.log);
  const softmax = (x: number[]) => { const m = Math.max(...x), e = x.map((v) => Math.exp(v - m)), s = e.reduce((a, c) => a + c, 0); return e.map((v) => v / s); };
  const reverseKl = (x: number[]) => softmax(x).reduce((s, p, i) => s + p * (Math.log(p) - b[i]), 0);
  const pi = softmax(z);
  for (let j = 0; j < 3; j++) {
    // ∂logπ_i/∂z_j = [i = j] − π_j
    const expected = pi.reduce((s, p, i) => s + p * k2Token(Math.log(p), b[i]).dlogp * ((i === j ? 1 : 0) - pi[j]), 0);
    const h = 1e-6, zp = [...z], zm = [...z];
    zp[j] += h; zm[j] -= h;
    const numeric = (reverseKl(zp) - reverseKl(zm)) / (2 * h);
    assert.ok(Math.abs(expected - numeric) < 1e-6, `z${j}: ${expected} vs ${numeric}`);
  }
});

test('the exact KL over the vocabulary: hand-computed values, and its gradient in the logits equals k2\'s expected gradient', () => {
  const table: [number[], number[], number][] = [
    // [π, base, Σ π log(π/b)]
    [[0.5, 0.5], [0.5, 0.5], 0],
    [[1, 0], [0.5, 0.5], Math.log(2)], // a token with π = 0 adds nothing
    [[0.5, 0.3, 0.2], [0.2, 0.3, 0.5], 0.5 * Math.log(2.5) + 0.2 * Math.log(0.4)],
    [[0.9, 0.1], [0.99, 0.01], 0.9 * Math.log(0.9 / 0.99) + 0.1 * Math.log(10)], // mass moved onto a token the base finds unlikely
  ];
  for (const [pi, b, kl] of table) close(fullKlRow(pi.map(Math.log), b.map(Math.log)), kl, `KL(${pi} ‖ ${b})`);
  assert.throws(() => fullKlRow([0, 0], [0]), /2 policy log-probs against 1 base/);
  // the gradient in z (π = softmax(z)) against a central difference and against E_π[dk2/dlogp · ∂logπ/∂z]
  const z = [0.3, -0.2, 0.9, -1.4], b = [0.4, 0.3, 0.2, 0.1].map(Math.log);
  const logSoftmax = (x: number[]) => { const m = Math.max(...x), s = x.reduce((a, v) => a + Math.exp(v - m), 0); return x.map((v) => v - m - Math.log(s)); };
  const dz = new Float64Array(4);
  fullKlRow(logSoftmax(z), b, dz);
  const pi = logSoftmax(z).map(Math.exp);
  for (let j = 0; j < 4; j++) {
    const h = 1e-6, zp = [...z], zm = [...z];
    zp[j] += h; zm[j] -= h;
    const numeric = (fullKlRow(logSoftmax(zp), b) - fullKlRow(logSoftmax(zm), b)) / (2 * h);
    assert.ok(Math.abs(dz[j] - numeric) < 1e-6, `z${j}: ${dz[j]} vs ${numeric}`);
    const k2Expected = pi.reduce((s, p, i) => s + p * k2Token(Math.log(p), b[i]).dlogp * ((i === j ? 1 : 0) - pi[j]), 0);
    assert.ok(Math.abs(dz[j] - k2Expected) < 1e-9, `z${j}: exact ${dz[j]} vs k2's expectation ${k2Expected}`);
  }
});

test('the entropy guard: how far H(π) rose above H(π_base), 0 where the policy is surer, and its gradient in the logits', () => {
  const H = (p: number[]) => -p.reduce((s, x) => s + (x > 0 ? x * Math.log(x) : 0), 0);
  const table: [number[], number[], number][] = [
    // [π, base, max(0, H(π) − H(base))]
    [[0.5, 0.5], [0.5, 0.5], 0],
    [[0.5, 0.5], [0.9, 0.1], Math.log(2) - H([0.9, 0.1])], // the policy spread the base's sure choice over two tokens
    [[0.9, 0.1], [0.5, 0.5], 0], // surer than the base: no push
    [[0.25, 0.25, 0.25, 0.25], [0.97, 0.01, 0.01, 0.01], Math.log(4) - H([0.97, 0.01, 0.01, 0.01])],
  ];
  for (const [pi, b, want] of table) close(entropyExcessRow(pi.map(Math.log), b.map(Math.log)), want, `excess(${pi} ‖ ${b})`);
  assert.throws(() => entropyExcessRow([0, 0], [0]), /2 policy log-probs against 1 base/);
  const logSoftmax = (x: number[]) => { const m = Math.max(...x), s = x.reduce((a, v) => a + Math.exp(v - m), 0); return x.map((v) => v - m - Math.log(s)); };
  const b = logSoftmax([3, 0, -1, -2]);
  for (const z of [[0.1, 0.2, 0.15, -0.1], [2.5, 0.3, -0.5, -1.5]]) {
    const dz = new Float64Array(4);
    const excess = entropyExcessRow(logSoftmax(z), b, dz);
    assert.ok(excess > 0, `the policy ${z} is less sure than the base`);
    for (let j = 0; j < 4; j++) {
      const h = 1e-6, zp = [...z], zm = [...z];
      zp[j] += h; zm[j] -= h;
      const numeric = (entropyExcessRow(logSoftmax(zp), b) - entropyExcessRow(logSoftmax(zm), b)) / (2 * h);
      assert.ok(Math.abs(dz[j] - numeric) < 1e-6, `z${j}: ${dz[j]} vs ${numeric}`);
    }
  }
  const sure = new Float64Array(4).fill(9);
  assert.equal(entropyExcessRow(b, logSoftmax([0.1, 0.2, 0.15, -0.1]), sure), 0);
  assert.deepEqual([...sure], [0, 0, 0, 0], 'no gradient where the policy is surer than the base');
});

test('cross-entropy token loss is −logp with derivative −1', () => {
  assert.deepEqual(crossEntropyToken(-2.5), { loss: 2.5, dlogp: -1 });
});

test('unlikelihood: −log(1 − p) and p/(1 − p), finite for a certain token; its push on the logit is p', () => {
  const close = (a: number, b: number, m: string) => assert.ok(Math.abs(a - b) < 1e-9 * Math.max(1, Math.abs(b)), `${m}: ${a} vs ${b}`);
  const table: [number, number, number][] = [
    // p, loss, dlogp
    [0.5, Math.log(2), 1], [0.9, -Math.log(0.1), 9], [0.1, -Math.log(0.9), 0.1 / 0.9], [0.99, -Math.log(0.01), 99],
  ];
  for (const [p, loss, dlogp] of table) {
    const u = unlikelihoodToken(Math.log(p));
    close(u.loss, loss, `loss at p=${p}`);
    close(u.dlogp, dlogp, `dlogp at p=${p}`);
    close(u.dlogp * (1 - p), p, `logit push at p=${p}`);
  }
  // numeric derivative in log p
  const lp = Math.log(0.7), h = 1e-6;
  close(unlikelihoodToken(lp).dlogp, (unlikelihoodToken(lp + h).loss - unlikelihoodToken(lp - h).loss) / (2 * h), 'numeric');
  const certain = unlikelihoodToken(0);
  assert.ok(Number.isFinite(certain.loss) && Number.isFinite(certain.dlogp));
  close(certain.dlogp, UNLIKELIHOOD_MAX_P / (1 - UNLIKELIHOOD_MAX_P), 'held under the cap');
});
