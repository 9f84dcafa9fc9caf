// Directional finite-difference checks of a LoRA trainer's gradient: a random direction over the
// adapter's tensors, the analytic derivative along it (gradient · direction), and the central
// difference of a loss along it.
import type { LoraTrainer } from '../../src/engine/embedded/trainer.ts';
import type { Rng } from '../../src/engine/embedded/rng.ts';

/** One random direction per adapter tensor (zero for tensors `include` leaves out). */
export function adapterDirections(tr: LoraTrainer, rng: Rng, include: (t: { target: string; which: string }) => boolean = () => true): Float32Array[] {
  return [...tr.adapter.tensors()].map((p) => Float32Array.from({ length: p.data.length }, () => (include(p) ? rng.next() * 2 - 1 : 0)));
}

/** The accumulated gradient · `dirs`; the gradient is cleared afterwards. */
export function gradientAlong(tr: LoraTrainer, dirs: Float32Array[]): number {
  let dot = 0;
  [...tr.grads.tensors()].forEach((g, i) => { for (let j = 0; j < g.data.length; j++) dot += g.data[j] * dirs[i][j]; });
  tr.grads.zero(); tr.pendingTokens = 0;
  return dot;
}

/** (loss(w + h·dirs) − loss(w − h·dirs)) / 2h; the weights are restored. */
export function centralDifference(tr: LoraTrainer, dirs: Float32Array[], loss: () => number, h = 1e-3): number {
  const params = [...tr.adapter.tensors()];
  const shift = (sign: number) => params.forEach((p, i) => { for (let j = 0; j < p.data.length; j++) p.data[j] += sign * h * dirs[i][j]; });
  shift(1);
  const plus = loss();
  shift(-2);
  const minus = loss();
  shift(1);
  return (plus - minus) / (2 * h);
}
