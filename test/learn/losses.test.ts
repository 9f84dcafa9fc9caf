// Hand-computed cases for the per-token losses (src/learn/losses.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ppoToken, k3Token, k2Token, klToken, crossEntropyToken } from '../../src/learn/losses.ts';

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

test('cross-entropy token loss is −logp with derivative −1', () => {
  assert.deepEqual(crossEntropyToken(-2.5), { loss: 2.5, dlogp: -1 });
});
