import { test } from 'node:test';
import assert from 'node:assert/strict';
import { canaryKlFactor, CANARY_BUDGET_DEFAULTS } from '../../src/learn/canary-budget.ts';
import { canaryMean } from '../../src/learn/weights-guard.ts';

const budget = { ...CANARY_BUDGET_DEFAULTS, budget: 1 };

test('β keeps the recipe\'s value under the budget and grows with the excess above it, up to maxFactor', () => {
  const cases: { fall: number; want: number; why: string }[] = [
    { fall: -0.3, want: 1, why: 'the canary rose: nothing to hold' },
    { fall: 0, want: 1, why: 'at the base' },
    { fall: 0.8, want: 1, why: 'under the budget (the persona runs\' largest fall)' },
    { fall: 1, want: 1, why: 'at the budget' },
    { fall: 1.25, want: 2, why: 'a quarter budget over: 1 + 4·0.25' },
    { fall: 1.5, want: 3, why: 'half a budget over' },
    { fall: 3, want: 9, why: 'two budgets over' },
    { fall: 8.9, want: 20, why: 'far past: capped at maxFactor' },
    { fall: Number.NaN, want: 1, why: 'no measurement: β stays' },
    { fall: Number.POSITIVE_INFINITY, want: 1, why: 'a broken canary is the weights guard\'s business' },
  ];
  for (const c of cases) assert.ok(Math.abs(canaryKlFactor(c.fall, budget) - c.want) < 1e-12, `${c.why}: got ${canaryKlFactor(c.fall, budget)}, want ${c.want}`);
});

test('the factor scales with the budget: the same relative excess gives the same factor', () => {
  assert.equal(canaryKlFactor(0.75, { ...budget, budget: 0.5 }), 3);
  assert.equal(canaryKlFactor(3, { ...budget, budget: 2 }), 3);
  assert.equal(canaryKlFactor(5, { ...budget, budget: 0 }), 1, 'a budget of 0 is no budget');
});

test('canaryMean: the mean over every token of every text, not the mean of the texts\' means', () => {
  assert.equal(canaryMean([[-1, -3], [-2]]), -2);
  assert.equal(canaryMean([new Float32Array([-1, -1, -1, -1]), [-6]]), -2);
  assert.ok(Number.isNaN(canaryMean([])));
  assert.ok(Number.isNaN(canaryMean([[]])));
});
