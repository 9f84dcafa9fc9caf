import { test } from 'node:test';
import assert from 'node:assert/strict';
import { distillFade, DISTILL_FADE_FLOOR } from '../../src/learn/distill-fade.ts';

test('the distilled term fades as the recent answers please, in full while half or more miss, never under the floor', () => {
  const cases: { recent: number[]; want: number; why: string }[] = [
    { recent: [], want: 1, why: 'nothing judged yet: in full' },
    { recent: [-1, -1, -1, -1], want: 1, why: 'every answer misses' },
    { recent: [1, -1, 0, 1], want: 1, why: 'half miss (a neutral 0 is not a success)' },
    { recent: [1, 1, 1, -1], want: 0.5, why: 'a quarter miss: half strength' },
    { recent: [1, 1, 1, 1, 1, 1, 1, 1, 1, -1], want: DISTILL_FADE_FLOOR, why: 'a tenth miss: 0.2, the floor' },
    { recent: [1, 1, 1, 1], want: DISTILL_FADE_FLOOR, why: 'every answer pleases: the floor' },
    { recent: [0.5, 1, -0.5, 1], want: 0.5, why: 'scaled rewards count by their sign' },
  ];
  for (const c of cases) assert.ok(Math.abs(distillFade(c.recent, 0.5) - c.want) < 1e-12, `${c.why}: got ${distillFade(c.recent, 0.5)}, want ${c.want}`);
  assert.equal(distillFade([1, 1], 0.5, 0), 0, 'a floor of 0 lets it fade out');
  assert.equal(distillFade([1, 1, 1, -1], 0.25), 1, 'a knee of 0.25: in full while a quarter miss');
  assert.equal(distillFade([1, 1, 1, 1, 1, 1, 1, -1], 0.25), 0.5, 'an eighth miss: half strength');
  for (const knee of [0, -0.5, 1.5, Number.NaN]) assert.throws(() => distillFade([1], knee), /knee must be in/);
});
