// The curriculum: the level moves up when the running success rate is above the band, down when
// below, only after enough episodes at a level, within the level range; and leveled tasks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Curriculum, curriculumSource } from '../../src/agent/curriculum.ts';
import { makeLeveledTask, MAX_LEVEL } from '../../src/env/arithmetic.ts';
import { calculate } from '../../src/env/calculator.ts';
import { loadTasks } from '../../src/env/tasks.ts';

test('the level rises above the band, falls below it, holds inside it, and waits for enough episodes', () => {
  const c = new Curriculum({ band: [0.3, 0.7], window: 8, minEpisodes: 4, startLevel: 2, maxLevel: 3 });
  const g = (n: number, ok: number) => Array.from({ length: n }, (_, i) => i < ok);
  const groups = [g(2, 2), g(2, 2), g(4, 4), g(4, 0)];
  const steps = groups.map((outcomes) => c.record(c.level, outcomes));
  assert.deepEqual(steps.map((s) => s.move), ['stay', 'up', 'stay', 'stay']);
  assert.deepEqual(steps.map((s) => s.next), [2, 3, 3, 3]);
  assert.deepEqual(steps.map((s) => s.inBand), [false, false, false, true]);
  assert.equal(steps[3].success, 0.5);
  // the window keeps the last 8 at this level: 4 successes + 4 failures, then 4 more failures → 0/8 < 0.3 → down
  const down = c.record(3, g(4, 0));
  assert.deepEqual([down.success, down.move, down.next], [0, 'down', 2]);
  // outcomes of groups played at an older level do not count at the new one
  const stale = c.record(3, g(4, 4));
  assert.deepEqual([stale.episodes, stale.move], [0, 'stay']);
  assert.throws(() => new Curriculum({ band: [0.7, 0.3] }), /band/);
});

test('a curriculum source draws tasks at the current level and logs each group', () => {
  const src = curriculumSource(new Curriculum({ window: 4, minEpisodes: 4 }), (seed, level) => makeLeveledTask('train', seed, level) as never);
  const first = src.next(0);
  assert.equal(first.difficulty, 1);
  src.onGroup!(first, [true, true, true, true]);
  assert.equal(src.next(1).difficulty, 2);
  assert.equal(src.log.length, 1);
  assert.equal(src.log[0].move, 'up');
});

test('leveled tool-call tasks: correct answers, the level in the key, longer operands with the level', () => {
  const longShare: number[] = [];
  for (let level = 1; level <= MAX_LEVEL; level++) {
    let long = 0;
    for (let seed = 0; seed < 200; seed++) {
      const t = makeLeveledTask('heldout', seed, level);
      assert.equal(calculate(t.expression), t.answer, t.key);
      assert.equal(t.difficulty, level);
      assert.ok(t.answer >= 0, t.expression);
      if (level === 1) assert.match(t.expression, /^\d [-+*] \d$/);
      if (level === 2) assert.match(t.expression, /^\d\d (?:[-+] \d\d|\* \d\d?)$/);
      if (level <= 4) assert.match(t.expression, /^\d{1,3} [-+*] \d{1,3}$/);
      if (/\d{3}/.test(t.expression) || level === 5) long++;
    }
    longShare.push(long / 200);
  }
  // the share of tasks with a three-digit operand: none, none, about 1 − (3/4)², about 1 − (1/2)², all (level 5: three-digit or words)
  assert.deepEqual(longShare.slice(0, 2), [0, 0]);
  assert.ok(Math.abs(longShare[2] - 0.44) < 0.1 && Math.abs(longShare[3] - 0.75) < 0.1, JSON.stringify(longShare));
  assert.equal(longShare[4], 1);
  assert.throws(() => makeLeveledTask('train', 0, 6), /1–5/);
  const mixed = loadTasks('toolcall', 'levels:heldout:10');
  assert.deepEqual(mixed.map((t) => t.difficulty), [1, 2, 3, 4, 5, 1, 2, 3, 4, 5]);
  assert.ok(loadTasks('toolcall', 'level3:train:5').every((t) => t.difficulty === 3));
  assert.throws(() => loadTasks('terminal', 'level2:train:5'), /toolcall/);
});

test('against a simulated policy whose success falls with the level, the running success rate stays inside the band', () => {
  // a labelled stand-in for a policy: success probability per level (not the product; the controller is what is tested)
  const pSuccess = [0.97, 0.85, 0.5, 0.2, 0.05];
  const c = new Curriculum({ band: [0.3, 0.7], window: 32, minEpisodes: 16, startLevel: 1 });
  let seed = 7;
  const random = () => { seed = (seed * 1103515245 + 12345) % 2 ** 31; return seed / 2 ** 31; };
  const steps = Array.from({ length: 200 }, () => c.record(c.level, Array.from({ length: 4 }, () => random() < pSuccess[c.level - 1])));
  // after the climb from level 1 (the first ~10 groups), the judged rate stays in the band
  const settled = steps.slice(20).filter((s) => s.episodes >= 16);
  const inBand = settled.filter((s) => s.inBand).length / settled.length;
  assert.ok(inBand >= 0.8, `in band ${inBand}`);
  assert.equal(c.level, 3);
  // it spends most of the run at the level whose success rate (0.5) is inside the band
  assert.ok(steps.filter((s) => s.level === 3).length > 150);
});
