// `bench hint`: a row's numbers from scored answers (table), the base's answers read under hints and scored as the
// evaluation scores them (the row without a hint is the evaluation of the base itself), and the command's usage errors.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { summarize } from '../../src/bench/hint-reading.ts';
import { validatePersona } from '../../src/bench/persona.ts';
import type { EvaluatedSample } from '../../src/bench/evaluate.ts';
import { STORIES } from '../helpers/models.ts';

const BIN = new URL('../../bin/openclaw-rl.js', import.meta.url).pathname;
const answer = (satisfied: boolean, fluent: boolean, ll: number, text = 'x'): EvaluatedSample => ({
  prompt: 'p', seed: 1, text, tokens: 4, satisfied, fluent, fluentPlain: fluent, baseMeanLogLikelihood: ll, maxNgramCount: 1, longestCharRun: 1,
});

test('a row: satisfied, fluent and satisfied-and-fluent shares, the satisfying answers\' fluent share and median log-likelihood', () => {
  const table: [string, EvaluatedSample[], Partial<ReturnType<typeof summarize>>][] = [
    ['none satisfy', [answer(false, true, -0.5), answer(false, false, -2)], { samples: 2, satisfiedRate: 0, fluentRate: 0.5, satisfiedAndFluentRate: 0, fluentWhenSatisfied: null, satisfiedMedianLogLikelihood: null }],
    ['half satisfy, one of those fluent', [answer(true, true, -0.6), answer(true, false, -1.4), answer(false, true, -0.2), answer(false, true, -0.3)],
      { samples: 4, satisfiedRate: 0.5, fluentRate: 0.75, satisfiedAndFluentRate: 0.25, fluentWhenSatisfied: 0.5, satisfiedMedianLogLikelihood: -1 }],
    ['every answer satisfies, odd count', [answer(true, true, -0.9), answer(true, true, -0.7), answer(true, false, -3)], { satisfiedRate: 1, satisfiedAndFluentRate: 2 / 3, fluentWhenSatisfied: 2 / 3, satisfiedMedianLogLikelihood: -0.9 }],
    ['no answers', [], { samples: 0, satisfiedRate: 0, fluentRate: 0, fluentWhenSatisfied: null }],
  ];
  for (const [name, samples, want] of table) {
    const row = summarize('h', samples);
    for (const [k, v] of Object.entries(want)) assert.equal(row[k as keyof typeof row], v, `${name}: ${k}`);
  }
  const examples = summarize(null, [answer(true, true, -1, 'a'), answer(false, true, -1, 'b'), answer(true, true, -1, 'c'), answer(true, true, -1, 'd'), answer(true, true, -1, 'e')]).examples;
  assert.deepEqual(examples, ['a', 'c', 'd'], 'up to three satisfying answers, in order');
});

test('the base under hints on stories260K: the row without a hint has the base\'s own held-out evaluation\'s rates', { timeout: 120_000 }, async () => {
  const { EmbeddedEngine } = await import('../../src/engine/embedded/engine.ts');
  const { calibrateFluency, evaluateHeldOut } = await import('../../src/bench/evaluate.ts');
  const { readHints } = await import('../../src/bench/hint-reading.ts');
  const engine = await EmbeddedEngine.load(STORIES);
  try {
    const persona = validatePersona({
      name: 'x', trainPrompts: ['a'], heldOutPrompts: ['Once upon a time', 'One day'], satisfied: { includes: ['the'] },
      feedback: { satisfied: ['Thanks!'], unsatisfied: ['More of the, please.'] }, preference: 'The user wants the word the.', maxTokens: 16,
    });
    const bands = await calibrateFluency(engine, persona, 2);
    const lines: string[] = [];
    const r = await readHints(engine, persona, bands, [null, persona.preference!, 'Write about a cat.'], 3, (l) => lines.push(l));
    assert.equal(r.rows.length, 3);
    assert.deepEqual(r.rows.map((x) => x.hint), [null, persona.preference, 'Write about a cat.']);
    for (const row of r.rows) {
      assert.equal(row.samples, 6);
      assert.ok(row.satisfiedAndFluentRate <= Math.min(row.satisfiedRate, row.fluentRate));
    }
    const own = await evaluateHeldOut(engine, persona, 3, bands, 'base');
    assert.deepEqual([r.rows[0].satisfiedRate, r.rows[0].fluentRate, r.rows[0].satisfiedAndFluentRate], [own.rate, own.fluentRate, own.satisfiedAndFluentRate]);
    assert.equal(lines.length, 3);
    assert.match(lines[0], /^\(no hint\): satisfied \d+%, satisfied-and-fluent \d+%, fluent \d+%/);
  } finally {
    await engine.close();
  }
});

test('bench hint: usage errors are clear and exit 2', () => {
  const table: [string[], RegExp][] = [
    [['--persona', 'nobody-at-all'], /no shipped persona 'nobody-at-all'/],
    [['--persona', 'chat-cat-lover', '--persona-file', 'personas/chat-cat-lover.json'], /--persona and --persona-file both name a persona/],
    [['--k', '0'], /--k/],
    [['--persona', 'dog-lover'], /dog-lover states no preference .*give the hint to read with --hint TEXT/],
    [['--persona', 'chat-cat-lover', '--hint', ' '], /--hint must not be empty/],
  ];
  for (const [args, why] of table) {
    const r = spawnSync(process.execPath, [BIN, 'bench', 'hint', '--model', STORIES, ...args], { encoding: 'utf8' });
    assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, why);
  }
});
