// Full-parameter training's hand-written gradients against central finite differences, one weight
// kind at a time (embeddings tied and untied, LM head, every RMSNorm incl. Qwen3's q/k norms, the
// Qwen2 q/k/v biases, every projection), for llama, qwen2 and qwen3 shapes.
// Method as in gradcheck.test.ts: a random direction d over the parameters of one kind, and
// (L(θ + h·d) − L(θ − h·d)) / 2h against Σ ∂L/∂θ · d, with L the token sum of the loss, h = 1e-3 and
// a 1% relative tolerance, or 1e-3 absolute: the losses are sums near 70 whose float32 rounding
// (ulp ≈ 8e-6) divided by 2h is of that order (a smaller h is noisier, a larger one sees the curvature
// of the scaled-up random weights). Weights are perturbed where the kernels read them (packed panels).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Transformer } from '../../src/engine/embedded/model.ts';
import { FullTrainer } from '../../src/engine/embedded/full-trainer.ts';
import type { FullParam } from '../../src/engine/embedded/full-weights.ts';
import { ppoToken, k3Token, PPO_DEFAULTS, type LossSpec } from '../../src/learn/losses.ts';
import { wholeDistributionSums } from '../helpers/gradcheck.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import type { Datum } from '../../src/engine/types.ts';
import { tempDir, tinyModel } from '../helpers/models.ts';
import { FAST_KERNELS } from '../helpers/kernels.ts';

const tmp = tempDir();
after(tmp.cleanup);

function lossSum(tr: FullTrainer, data: Datum[], spec: LossSpec): number {
  const T = spec.temperature ?? 1;
  const lps = tr.logprobs(data, false, T);
  const full = spec.kind === 'ppo' && spec.klCoef && spec.klEstimator === 'full';
  const base = spec.kind === 'ppo' && spec.klCoef && !full ? tr.logprobs(data, true, T) : null;
  // the exact term: the trained weights' distributions against the base's (the model's own weights)
  const guard = spec.kind === 'ppo' ? spec.entropyGuard ?? 0 : 0;
  const whole = full || guard ? wholeDistributionSums(tr.model, data, null, tr.weights, T) : null;
  if (whole && guard) guardActive.push(whole.guardActive);
  let sum = (full ? spec.klCoef! * whole!.kl : 0) + guard * (whole?.entropyExcess ?? 0);
  data.forEach((d, k) => lps[k].forEach((lp, t) => {
    const mask = d.lossMask?.[t] ?? 1;
    if (spec.kind === 'cross_entropy') { sum += -lp * mask; return; }
    let l = ppoToken(lp, d.behaviourLogprobs![t], d.advantages![t], spec.clipLow ?? PPO_DEFAULTS.clipLow, spec.clipHigh ?? PPO_DEFAULTS.clipHigh).loss;
    if (base) l += spec.klCoef! * k3Token(lp, base[k][t]).kl;
    sum += l * mask;
  }));
  return sum;
}

/** The weight kind of a parameter, from its first Hugging Face name. */
function kindOf(p: FullParam): string {
  const name = p.parts[0][0];
  if (name === 'model.embed_tokens.weight') return 'embed';
  if (name === 'lm_head.weight') return 'lm_head';
  if (name === 'model.norm.weight') return 'final_norm';
  return name.replace(/^model\.layers\.\d+\.(self_attn\.|mlp\.)?/, '').replace(/\.weight$/, '');
}

/** Add s·d (row-major) to a parameter where the kernels read it. */
function shift(p: FullParam, d: Float32Array, s: number): void {
  for (let r = 0; r < p.rows; r++) for (let k = 0; k < p.cols; k++) {
    const i = p.packed ? (r >> 3) * p.cols * 8 + k * 8 + (r & 7) : r * p.cols + k;
    p.data[i] += s * d[r * p.cols + k];
  }
}

/** the entropy guard's active positions at each loss evaluation of the last central difference (see gradcheck.test.ts) */
const guardActive: string[] = [];

function directionalCheck(tr: FullTrainer, data: Datum[], spec: LossSpec, seed: number, kind: string): { analytic: number; numeric: number; kink: boolean } {
  const rng = new Rng(seed);
  const dirs = tr.params.map((p) => Float32Array.from({ length: p.rows * p.cols }, () => (kindOf(p) === kind ? rng.next() * 2 - 1 : 0)));
  tr.zeroGrads();
  tr.forwardBackward(data, spec);
  let analytic = 0;
  tr.grads.forEach((g, i) => { for (let j = 0; j < g.length; j++) analytic += g[j] * dirs[i][j]; });
  tr.zeroGrads();
  const quotient = (h: number) => {
    tr.params.forEach((p, i) => shift(p, dirs[i], h));
    const plus = lossSum(tr, data, spec);
    tr.params.forEach((p, i) => shift(p, dirs[i], -2 * h));
    const minus = lossSum(tr, data, spec);
    tr.params.forEach((p, i) => shift(p, dirs[i], h));
    return (plus - minus) / (2 * h);
  };
  guardActive.length = 0;
  const numeric = quotient(1e-3);
  return { analytic, numeric, kink: new Set(guardActive).size > 1 };
}

const ARCHS = {
  'llama, tied embeddings': tinyConfig('llama'),
  'llama, untied embeddings': tinyConfig('llama', { tie_word_embeddings: false }),
  'qwen2 (biases, untied)': tinyConfig('qwen2'),
  'qwen3 (q/k norms, tied)': tinyConfig('qwen3', { head_dim: 16 }),
};

for (const [name, raw] of Object.entries(ARCHS)) {
  const native = FAST_KERNELS.includes('native') ? [['native', 'recomputed']] as const : [];
  for (const [kernel, tapes] of [['ts', 'kept'], ['wasm', 'recomputed'], ...native] as const) {
    test(`full-parameter gradient check, ${name} (${kernel} kernel, layer tapes ${tapes}): every weight kind matches finite differences`, async () => {
      const dir = join(tmp.dir, name.replace(/\W+/g, '-'));
      tinyModel(dir, raw, { scale: 10 });
      const model = Transformer.load(dir, { kernel });
      try {
        const tr = new FullTrainer(model);
        if (tapes === 'recomputed') tr.tapeBudgetBytes = 0;
        // norm weights start at 1 and biases at random: move the norms off 1 so their gradients are generic
        const rng = new Rng(3);
        for (const p of tr.params) if (kindOf(p).endsWith('norm')) for (let i = 0; i < p.data.length; i++) p.data[i] = 1 + (rng.next() - 0.5) * 0.4;
        const data: Datum[] = [
          { promptIds: [1, 7, 9, 11], responseIds: [20, 30, 40, 50, 60, 70] },
          { promptIds: [1, 100], responseIds: [200, 300, 7, 400], lossMask: [1, 0, 1, 1] },
        ];
        const current = tr.logprobs(data);
        data.forEach((d, k) => {
          d.behaviourLogprobs = Array.from(current[k], (lp, t) => lp + 0.05 * Math.sin(t + k));
          d.advantages = d.responseIds.map((_, t) => (t % 2 ? 1 : -0.5));
        });
        const kinds = [...new Set(tr.params.map(kindOf))];
        for (const k of ['embed', 'input_layernorm', 'post_attention_layernorm', 'q_proj', 'o_proj', 'gate_proj', 'down_proj', 'final_norm']) assert.ok(kinds.includes(k), `${k} in ${kinds}`);
        if (raw.tie_word_embeddings === false) assert.ok(kinds.includes('lm_head'));
        else assert.ok(!kinds.includes('lm_head'), 'a tied LM head is the embedding, one tensor');
        if (raw.model_type === 'qwen2') assert.ok(kinds.includes('q_proj.bias'));
        if (raw.model_type === 'qwen3') assert.ok(kinds.includes('q_norm') && kinds.includes('k_norm'));
        let worst = 0, kinks = 0, guardChecks = 0;
        // the exact KL term and the entropy guard (TypeScript sums over the vocabulary) on the exact kernel, where its finite difference is not lost in rounding
        const fullKl = kernel === 'ts' ? [{ kind: 'ppo', klCoef: 0.3, klEstimator: 'full', entropyGuard: 2 }] : [];
        for (const spec of [{ kind: 'ppo', klCoef: 0.3 }, ...fullKl, { kind: 'cross_entropy', temperature: 0.7 }] as LossSpec[]) {
          const label = spec.kind === 'ppo' && spec.entropyGuard ? 'ppo, exact KL and entropy guard' : spec.kind;
          for (const kind of kinds) {
            const { analytic, numeric, kink } = directionalCheck(tr, data, spec, 11, kind);
            if (kink) { kinks++; continue; }
            if (spec.kind === 'ppo' && spec.entropyGuard) guardChecks++;
            assert.ok(Math.abs(analytic) > 1e-2, `${label} ${kind}: the directional derivative should not vanish (${analytic})`);
            const rel = Math.abs(analytic - numeric) / Math.max(Math.abs(numeric), 1e-6);
            worst = Math.max(worst, rel);
            assert.ok(rel < 1e-2 || Math.abs(analytic - numeric) < 1e-3, `${label} ${kind}: analytic ${analytic} vs numeric ${numeric} (relative error ${rel.toExponential(2)})`);
          }
        }
        if (kernel === 'ts') assert.ok(guardChecks >= kinds.length / 2, `the entropy guard was checked on ${guardChecks} weight kinds (${kinks} crossed its kink)`);
        console.log(`# ${name} (${kernel}, tapes ${tapes}): kinds ${kinds.join(', ')}; worst relative error ${worst.toExponential(2)}${kinks ? ` (${kinks} checks across the entropy guard's kink skipped)` : ''}`);
        tr.release();
      } finally {
        await model.close();
      }
    });
  }
}
