import { test } from 'node:test';
import assert from 'node:assert/strict';
import { nextKlCoef, KL_BUDGET_DEFAULTS } from '../../src/learn/kl-budget.ts';

const budget = { ...KL_BUDGET_DEFAULTS, target: 0.1 };

test('β answers the KL against the budget, a bounded step at a time, never under the recipe\'s β', () => {
  const cases: { beta: number; kl: number | null; want: number; why: string }[] = [
    { beta: 0.2, kl: 0.1, want: 0.2, why: 'at the budget β holds' },
    { beta: 0.2, kl: 0.11, want: 0.2 * 1.1, why: '10% over: β grows 10% (gain 1)' },
    { beta: 0.2, kl: 0.5, want: 0.2 * 1.2, why: 'far over: the error is clipped at +0.2' },
    { beta: 0.5, kl: 0.05, want: 0.5 * 0.8, why: 'under the budget: β falls, the error clipped at −0.2' },
    { beta: 0.21, kl: 0.0, want: 0.2, why: 'never below the recipe\'s β' },
    { beta: 3.9, kl: 1, want: 4, why: 'never above the recipe\'s β × maxFactor' },
    { beta: 0.3, kl: null, want: 0.3, why: 'no KL measured: β stays' },
    { beta: 0.3, kl: Number.NaN, want: 0.3, why: 'a broken measurement: β stays' },
  ];
  for (const c of cases) assert.ok(Math.abs(nextKlCoef(c.beta, c.kl, 0.2, budget) - c.want) < 1e-12, `${c.why}: got ${nextKlCoef(c.beta, c.kl, 0.2, budget)}, want ${c.want}`);
});

test('with no KL term in the recipe the budget has nothing to scale', () => {
  assert.equal(nextKlCoef(0, 5, 0, budget), 0);
});
