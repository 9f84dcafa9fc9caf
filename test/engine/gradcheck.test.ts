// The hand-written backward pass against central finite differences.
// Method: a careful float32 check of directional derivatives. For a random direction d over every
// LoRA parameter, (L(θ + h·d) − L(θ − h·d)) / 2h must match Σ ∂L/∂θ · d. The loss is the token sum
// (what forwardBackward accumulates before optimStep divides by the token count), h = 1e-3, and the
// tolerance is 1% relative. Observed worst cases: ~1e-3 with the TS kernel, up to ~6e-3 with the
// WASM kernels (float32 rounding of the two losses; a larger h would cross the PPO clip kinks).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Transformer } from '../../src/engine/embedded/model.ts';
import { LoraTrainer } from '../../src/engine/embedded/trainer.ts';
import { ppoToken, klToken, PPO_DEFAULTS, type LossSpec } from '../../src/learn/losses.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import type { Datum } from '../../src/engine/types.ts';
import { tempDir, tinyModel } from '../helpers/models.ts';
import { FAST_KERNELS } from '../helpers/kernels.ts';
import { adapterDirections, centralDifference, gradientAlong, wholeDistributionSums } from '../helpers/gradcheck.ts';

const tmp = tempDir();
after(tmp.cleanup);

function lossSum(tr: LoraTrainer, data: Datum[], spec: LossSpec): number {
  const T = spec.temperature ?? 1;
  const lps = tr.logprobs(data, tr.adapter, T);
  const full = spec.kind === 'ppo' && spec.klCoef && spec.klEstimator === 'full';
  const base = spec.kind === 'ppo' && spec.klCoef && !full ? tr.logprobs(data, null, T) : null;
  const guard = spec.kind === 'ppo' ? spec.entropyGuard ?? 0 : 0;
  const whole = full || guard ? wholeDistributionSums(tr.model, data, tr.adapter, undefined, T) : null;
  if (whole && guard) guardActive.push(whole.guardActive);
  let sum = (full ? spec.klCoef! * whole!.kl : 0) + guard * (whole?.entropyExcess ?? 0);
  data.forEach((d, k) => lps[k].forEach((lp, t) => {
    const mask = d.lossMask?.[t] ?? 1;
    if (spec.kind === 'cross_entropy') { sum += -lp * mask; return; }
    let l = ppoToken(lp, d.behaviourLogprobs![t], d.advantages![t], spec.clipLow ?? PPO_DEFAULTS.clipLow, spec.clipHigh ?? PPO_DEFAULTS.clipHigh).loss;
    if (base) l += spec.klCoef! * klToken(spec.klEstimator === 'k2' ? 'k2' : 'k3', lp, base[k][t]).kl;
    sum += l * mask;
  }));
  return sum;
}

/** the entropy guard's active positions at each loss evaluation of the last central difference */
const guardActive: string[] = [];

/**
 * `only` restricts the direction to one module's A or B (e.g. 'o_proj.A'), so no error hides behind larger terms.
 * `kink`: the central difference crossed the entropy guard's kink (a position turned it on or off), so it is no check.
 */
function directionalCheck(tr: LoraTrainer, data: Datum[], spec: LossSpec, seed: number, only?: string): { analytic: number; numeric: number; kink: boolean } {
  const dirs = adapterDirections(tr, new Rng(seed), (p) => !only || only === `${p.target}.${p.which}`);
  tr.grads.zero(); tr.pendingTokens = 0;
  tr.forwardBackward(data, spec);
  const analytic = gradientAlong(tr, dirs);
  guardActive.length = 0;
  const numeric = centralDifference(tr, dirs, () => lossSum(tr, data, spec));
  return { analytic, numeric, kink: new Set(guardActive).size > 1 };
}

const ARCHS = {
  llama: tinyConfig('llama'),
  qwen2: tinyConfig('qwen2'),
  qwen3: tinyConfig('qwen3', { head_dim: 16 }),
  'mistral (sliding window 4)': tinyConfig('mistral', { sliding_window: 4 }),
};

for (const [name, raw] of Object.entries(ARCHS)) {
  const native = FAST_KERNELS.includes('native') ? [['native', 'kept']] as const : [];
  for (const [kernel, tapes] of [['ts', 'kept'], ['wasm', 'kept'], ['wasm', 'recomputed'], ...native] as const) {
    test(`gradient check, ${name} (${kernel} kernel, layer tapes ${tapes}): PPO with KL, and cross-entropy, match finite differences`, async () => {
      const dir = join(tmp.dir, name.replace(/\W+/g, '-'));
      tinyModel(dir, raw, { scale: 10 });
      const model = Transformer.load(dir, { kernel });
      try {
        const tr = new LoraTrainer(model, { rank: 4, alpha: 8, seed: 1 });
        if (tapes === 'recomputed') tr.tapeBudgetBytes = 0;
        // B starts at zero (PEFT); make it non-zero so A gets gradients too
        const rng = new Rng(2);
        for (const t of tr.adapter.tensors()) if (t.which === 'B') for (let i = 0; i < t.data.length; i++) t.data[i] = (rng.next() * 2 - 1) * 0.2;
        const data: Datum[] = [
          { promptIds: [1, 7, 9, 11], responseIds: [20, 30, 40, 50, 60, 70] },
          { promptIds: [1, 100], responseIds: [200, 300, 400], lossMask: [1, 0, 1] },
        ];
        // behaviour log-probs near the current ones keep every ratio inside the clip range (the surrogate is smooth there)
        const current = tr.logprobs(data, tr.adapter);
        data.forEach((d, k) => {
          d.behaviourLogprobs = Array.from(current[k], (lp, t) => lp + 0.05 * Math.sin(t + k));
          d.advantages = d.responseIds.map((_, t) => (t % 2 ? 1 : -0.5));
        });
        const directions = [undefined, ...['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'].flatMap((t) => [`${t}.A`, `${t}.B`])];
        let worst = 0;
        // the k2 term is the same TypeScript on every kernel: checked on the exact (ts) and WebAssembly kernels; the
        // native kernel's float32 products are checked by the k3 and cross-entropy specs (its rounding sits near the 1% bound).
        // The exact KL term and the entropy guard (sums over the vocabulary, also TypeScript) are checked on the exact
        // kernel, where their finite difference is not lost in float32 rounding of [tokens × vocab] log-probs.
        const specs = [{ kind: 'ppo', klCoef: 0.3 }, ...(kernel === 'native' ? [] : [{ kind: 'ppo', klCoef: 0.3, klEstimator: 'k2' }]),
          ...(kernel === 'ts' ? [{ kind: 'ppo', klCoef: 0.3, klEstimator: 'full' }, { kind: 'ppo', klCoef: 0.3, klEstimator: 'full', entropyGuard: 2 }, { kind: 'ppo', klCoef: 0.3, klEstimator: 'k2', entropyGuard: 2 }] : []), { kind: 'cross_entropy', temperature: 0.7 }] as LossSpec[];
        let kinks = 0, guardChecks = 0;
        for (const spec of specs) {
          for (const only of directions) {
            const { analytic, numeric, kink } = directionalCheck(tr, data, spec, 11, only);
            if (kink) { kinks++; continue; }
            if (spec.kind === 'ppo' && spec.entropyGuard) guardChecks++;
            assert.ok(Math.abs(analytic) > 1e-4, `${spec.kind}${spec.kind === 'ppo' ? ` ${spec.klEstimator ?? 'k3'}` : ''} ${only ?? 'all'}: the directional derivative should not vanish (${analytic})`);
            const rel = Math.abs(analytic - numeric) / Math.max(Math.abs(numeric), 1e-6);
            worst = Math.max(worst, rel);
            // the whole-distribution terms' loss sums float32 log-probs over [tokens × vocab]: its rounding divided by 2h
            // is ~5e-4, so a small directional derivative gets an absolute bound of 1e-3 as in full-gradcheck.test.ts
            const whole = spec.kind === 'ppo' && (spec.klEstimator === 'full' || (spec.entropyGuard ?? 0) > 0);
            const label = `${spec.kind}${spec.kind === 'ppo' ? ` ${spec.klEstimator ?? 'k3'}${spec.entropyGuard ? ' + entropy guard' : ''}` : ''}`;
            assert.ok(rel < 1e-2 || (whole && Math.abs(analytic - numeric) < 1e-3), `${label} ${only ?? 'all parameters'}: analytic ${analytic} vs numeric ${numeric} (relative error ${rel.toExponential(2)})`);
          }
        }
        if (kernel === 'ts') assert.ok(guardChecks >= directions.length, `the entropy guard was checked along ${guardChecks} directions (${kinks} crossed its kink)`);
        console.log(`# ${name} (${kernel}, tapes ${tapes}): worst relative error over ${specs.length * directions.length - kinks} directional checks (${kinks} across the entropy guard's kink skipped): ${worst.toExponential(2)}`);
        tr.release();
      } finally {
        await model.close();
      }
    });
  }
}

test('the exact KL term reports KL(π‖π_base) summed over the vocabulary (0 for a fresh adapter, the hand-summed value for a trained one); the entropy guard its excess, and a bad λ is refused', async () => {
  const dir = join(tmp.dir, 'full-kl-report');
  tinyModel(dir, tinyConfig('llama'), { scale: 10 });
  const model = Transformer.load(dir, { kernel: 'ts' });
  try {
    const tr = new LoraTrainer(model, { rank: 4, alpha: 8, seed: 1 });
    const data: Datum[] = [
      { promptIds: [1, 7], responseIds: [20, 30, 40], behaviourLogprobs: [-1, -1, -1], advantages: [1, 1, 1] },
      { promptIds: [1, 9, 4], responseIds: [50, 60], behaviourLogprobs: [-2, -2], advantages: [-1, -1], lossMask: [0, 1] },
    ];
    const spec: LossSpec = { kind: 'ppo', klCoef: 0.1, klEstimator: 'full' };
    const fresh = tr.forwardBackward(data, spec);
    assert.equal(fresh.tokens, 4);
    assert.ok(fresh.kl !== null && Math.abs(fresh.kl) < 1e-6, `a fresh adapter (B = 0) is the base: KL ${fresh.kl}`);
    tr.grads.zero(); tr.pendingTokens = 0;
    const rng = new Rng(5);
    for (const t of tr.adapter.tensors()) if (t.which === 'B') for (let i = 0; i < t.data.length; i++) t.data[i] = (rng.next() * 2 - 1) * 0.2;
    const m = tr.forwardBackward(data, spec);
    const expected = wholeDistributionSums(model, data, tr.adapter, undefined, 1).kl / 4;
    assert.ok(expected > 1e-4, `the adapter moved the distribution (${expected})`);
    assert.ok(Math.abs(m.kl! - expected) < 1e-5 * Math.max(1, expected), `reported ${m.kl} against ${expected}`);
    tr.grads.zero(); tr.pendingTokens = 0;
    // the entropy guard reports its mean excess; a guard that is not a finite λ ≥ 0 is a bad request that trains nothing
    const guarded = tr.forwardBackward(data, { ...spec, entropyGuard: 1 });
    assert.ok(Math.abs(guarded.entropyExcess! - wholeDistributionSums(model, data, tr.adapter, undefined, 1).entropyExcess / 4) < 1e-5);
    tr.grads.zero(); tr.pendingTokens = 0;
    for (const bad of [-1, Number.NaN, Infinity]) {
      assert.throws(() => tr.forwardBackward(data, { ...spec, entropyGuard: bad }), (e: Error & { code?: string }) => e.code === 'bad_request' && /entropyGuard must be a finite number/.test(e.message));
    }
    assert.equal(tr.pendingTokens, 0);
  } finally {
    await model.close();
  }
});
