// The personalization benchmark: personas and their rules, the simulated user over the real API,
// and a small run that writes its report files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { validatePersona, check, loadPersona, type Rule } from '../../src/bench/persona.ts';
import { SimulatedUser } from '../../src/bench/user.ts';
import { runPersonalize, writeReport } from '../../src/bench/personalize.ts';
import { PERSONAS_DIR } from '../../src/cli/bench.ts';
import { startTestServer } from '../helpers/server.ts';
import { STORIES, tempDir } from '../helpers/models.ts';
import { repeatShare } from '../../src/learn/repeat-guard.ts';

const valid = {
  name: 'x', trainPrompts: ['a'], heldOutPrompts: ['b'], satisfied: { includes: ['dog'] },
  feedback: { satisfied: ['Thanks!'], unsatisfied: ['No, a dog please.'] },
};

test('persona validation: clear errors that name the field', () => {
  const table: [unknown, RegExp][] = [
    [[], /must be a JSON object/],
    [{ ...valid, name: 'has space' }, /name must be/],
    [{ ...valid, trainPrompts: [] }, /trainPrompts must be an array of at least 1 non-empty string/],
    [{ ...valid, heldOutPrompts: ['a'] }, /heldOutPrompts must not repeat trainPrompts/],
    [{ ...valid, satisfied: { includes: 'dog' } }, /satisfied\.includes must be an array/],
    [{ ...valid, satisfied: { all: [{ maxWords: -1 }] } }, /satisfied\.all\[0\]\.maxWords must be a non-negative integer/],
    [{ ...valid, satisfied: { regex: '(' } }, /satisfied\.regex is not a valid regular expression/],
    [{ ...valid, satisfied: { sparkle: 1 } }, /unknown rule 'sparkle'/],
    [{ ...valid, satisfied: { includes: ['a'], avoid: ['b'] } }, /exactly one of/],
    [{ ...valid, feedback: { satisfied: ['ok'] } }, /feedback\.unsatisfied must be an array/],
    [{ ...valid, temperature: 3 }, /temperature must be a number from 0 to 2/],
    [{ ...valid, turns: 0 }, /turns must be an integer from 1 to 16/],
    [{ ...valid, turns: 2.5 }, /turns must be an integer from 1 to 16/],
    [{ ...valid, preference: ' ' }, /preference must be a non-empty string/],
    [{ ...valid, validationPrompts: [] }, /validationPrompts must be an array of at least 1/],
    [{ ...valid, validationPrompts: [valid.heldOutPrompts[0]] }, /validationPrompts must not repeat trainPrompts or heldOutPrompts/],
    [{ ...valid, validationPrompts: [valid.trainPrompts[0]] }, /validationPrompts must not repeat trainPrompts or heldOutPrompts/],
  ];
  for (const [p, message] of table) assert.throws(() => validatePersona(p), message, JSON.stringify(p));
  assert.equal(validatePersona(valid).name, 'x');
});

test('checker rules: words, limits, regex and composition', () => {
  const text = 'Once upon a time, a happy dog named Max ran to the park.';
  const table: [Rule, boolean][] = [
    [{ includes: ['dog', 'cat'] }, true], [{ includes: ['cat'] }, false], [{ includes: ['do'] }, false],
    [{ avoid: ['sad'] }, true], [{ avoid: ['happy'] }, false],
    [{ maxWords: 13 }, true], [{ maxWords: 12 }, false], [{ minWords: 13 }, true], [{ minWords: 14 }, false],
    [{ regex: '\\bnamed [A-Z][a-z]+' }, true], [{ regex: 'MAX' }, false], [{ regex: 'MAX', flags: 'i' }, true],
    [{ all: [{ includes: ['dog'] }, { avoid: ['sad'] }] }, true], [{ all: [{ includes: ['dog'] }, { avoid: ['happy'] }] }, false],
    [{ any: [{ includes: ['cat'] }, { maxWords: 20 }] }, true], [{ not: { includes: ['dog'] } }, false],
  ];
  for (const [rule, expected] of table) assert.equal(check(rule, text), expected, JSON.stringify(rule));
});

test('the shipped personas load: four for stories260K, seven written as chat requests for stories260k-chat', () => {
  const names = readdirSync(PERSONAS_DIR).filter((f) => f.endsWith('.json')).map((f) => loadPersona(join(PERSONAS_DIR, f)).name).sort();
  assert.deepEqual(names, ['chat-bear-lover', 'chat-bird-lover', 'chat-cat-lover', 'chat-dog-lover', 'chat-frog-lover', 'chat-named-hero', 'chat-short-stories', 'dog-lover', 'named-character', 'no-sad-words', 'short-stories']);
  for (const n of names.filter((x) => x.startsWith('chat-'))) {
    const p = loadPersona(join(PERSONAS_DIR, `${n}.json`));
    // held-out requests are worded differently from every training request
    assert.ok(p.heldOutPrompts.every((h) => !p.trainPrompts.includes(h)), n);
    // and a validation set worded unlike both, for choosing a recipe without tuning on the held-out requests
    assert.ok((p.validationPrompts ?? []).length >= 5, n);
    assert.ok(new Set(p.feedback.unsatisfied).size >= 5, `${n}: feedback in varied words`);
    // multi-turn sessions: praise asks for the next story; the evaluation's second fluency band needs the preference
    assert.ok((p.turns ?? 1) > 1 && p.preference, n);
  }
});

test('the blind personas (personas/blind/, written by someone who never read the recipe\'s phrasings) load as chat personas', () => {
  const dir = join(PERSONAS_DIR, 'blind');
  const names = readdirSync(dir).filter((f) => f.endsWith('.json')).map((f) => loadPersona(join(dir, f)).name).sort();
  assert.deepEqual(names, ['chat-apple-fan', 'chat-ball-fan', 'chat-balloon-fan', 'chat-brief-fan', 'chat-bunny-fan', 'chat-castle-fan', 'chat-cheerful-fan', 'chat-cookie-fan', 'chat-duck-fan', 'chat-fish-fan',
    'chat-gentle-fan', 'chat-hat-fan', 'chat-hero-name-fan', 'chat-kite-fan', 'chat-quick-bedtime-fan', 'chat-sun-fan', 'chat-tiny-tales-fan', 'chat-train-fan', 'chat-tree-fan']);
  for (const n of names) {
    const p = loadPersona(join(dir, `${n}.json`));
    assert.ok(p.heldOutPrompts.every((h) => !p.trainPrompts.includes(h)), n);
    assert.ok((p.validationPrompts ?? []).length >= 5 && new Set(p.feedback.unsatisfied).size >= 5 && (p.turns ?? 1) > 1 && p.preference, n);
  }
});

test('a multi-turn session: every answer but the last is paired with the feedback on it, and each verdict is the persona\'s', async () => {
  const s = await startTestServer();
  try {
    const persona = { ...loadPersona(join(PERSONAS_DIR, 'dog-lover.json')), turns: 3 };
    const r = await new SimulatedUser({ baseUrl: `${s.url}/v1`, model: 'stories', persona, seed: 9, id: 'bob' }).converse(0);
    const turns = s.store.turns('bob-0');
    assert.equal(turns.length, 4, 'three judged answers and the answer to the last feedback');
    assert.equal(r.turns.length, 3);
    r.turns.forEach((t, i) => {
      assert.equal(turns[i].response_text, t.answer);
      assert.equal(t.satisfied, check(persona.satisfied, t.answer));
      assert.ok((t.satisfied ? persona.feedback.satisfied : persona.feedback.unsatisfied).includes(t.feedback));
      assert.deepEqual(JSON.parse(turns[i].next_state_json!), { role: 'user', messages: [{ role: 'user', content: t.feedback }] });
    });
    assert.equal(turns[3].next_state_status, 'none');
    assert.deepEqual([r.answer, r.satisfied, r.feedback], [r.turns[0].answer, r.turns[0].satisfied, r.turns[0].feedback]);
  } finally {
    await s.close();
  }
});

test('the simulated user talks through the API: sessions, feedback as next state, sessions ended', async () => {
  const s = await startTestServer();
  try {
    const persona = loadPersona(join(PERSONAS_DIR, 'dog-lover.json'));
    const user = new SimulatedUser({ baseUrl: `${s.url}/v1`, model: 'stories', persona, seed: 5, id: 'alice' });
    const results = [await user.converse(0), await user.converse(1)];
    for (const [i, r] of results.entries()) {
      const turns = s.store.turns(`alice-${i}`);
      assert.equal(turns.length, 2);
      assert.equal(turns[0].type_source, 'header');
      assert.equal(turns[0].response_text, r.answer);
      assert.equal(turns[0].next_state_status, 'paired');
      assert.deepEqual(JSON.parse(turns[0].next_state_json!), { role: 'user', messages: [{ role: 'user', content: r.feedback }] });
      assert.equal(r.satisfied, check(persona.satisfied, r.answer));
      assert.ok((r.satisfied ? persona.feedback.satisfied : persona.feedback.unsatisfied).includes(r.feedback));
      assert.equal(turns[1].next_state_status, 'none', 'the session ended with the feedback turn');
      assert.equal(r.policyVersion, 0);
    }
    // the same seed holds the same conversation
    const again = new SimulatedUser({ baseUrl: `${s.url}/v1`, model: 'stories', persona, seed: 5, id: 'alice-again' });
    assert.deepEqual((await again.converse(0)).answer, results[0].answer);
  } finally {
    await s.close();
  }
});

test('a small benchmark run writes curve.json, plots of satisfaction and KL, a summary and every evaluated sample', { timeout: 120_000 }, async () => {
  const t = tempDir();
  try {
    // stories260K reads no hint: with the dog rule alone the hinted base satisfies it ~10 times in 100, under the
    // preference band's floor of 20; "the" (~43 in 100) draws a band on any machine and still leaves unsatisfied samples
    const persona = { ...loadPersona(join(PERSONAS_DIR, 'dog-lover.json')), satisfied: { includes: ['dog', 'dogs', 'puppy', 'the'] }, preference: 'The user wants a story about a dog.' };
    const lines: string[] = [];
    const run = await runPersonalize({ model: STORIES, persona, method: 'binary', conversations: 16, evalEvery: 8, evalK: 4, users: 2, batchSize: 4, rewardBaseline: 'none', progress: (l) => lines.push(l) });
    assert.deepEqual(run.curve.map((p) => p.conversations), [0, 8, 16]);
    assert.equal(run.steps, 4);
    assert.ok(run.curve.every((p) => p.rate >= 0 && p.rate <= 1 && Number.isFinite(p.klToBase) && Number.isFinite(p.referenceLogLikelihood)));
    assert.ok(run.curve.every((p) => p.satisfiedAndFluentRate <= Math.min(p.rate, p.fluentRate)));
    // satisfying samples are held to the band of the base's satisfying samples written with the preference as a hint; others to the plain band
    assert.ok(run.preferenceBand && run.preferenceBand.calibrationSamples <= persona.heldOutPrompts.length * 20);
    const near = (ll: number, lower: number) => Math.abs(ll - lower) < 1e-3; // the stored log-likelihoods are rounded
    // the preference band's repetition limit comes from the same base samples, never below the fixed 3
    const pref = run.preferenceBand!;
    assert.ok(Number.isInteger(pref.maxRepeats) && pref.maxRepeats >= 3);
    for (const x of run.samples) {
      const loops = x.maxNgramCount > 3 || x.longestCharRun > 5;
      const loopsForPreference = x.maxNgramCount > pref.maxRepeats || x.longestCharRun > 5;
      if (!near(x.baseMeanLogLikelihood, run.fluencyBand.lower)) assert.equal(x.fluentPlain, !loops && x.baseMeanLogLikelihood >= run.fluencyBand.lower);
      if (!x.satisfied) assert.equal(x.fluent, x.fluentPlain);
      else if (!near(x.basePreferenceMeanLogLikelihood!, pref.lower)) assert.equal(x.fluent, !loopsForPreference && x.basePreferenceMeanLogLikelihood! >= pref.lower);
    }
    assert.equal(run.turnsPerConversation, 1);
    const j = run.judge;
    assert.equal(j.satisfied.positive + j.satisfied.neutral + j.satisfied.negative + j.satisfied.unjudged + j.unsatisfied.positive + j.unsatisfied.neutral + j.unsatisfied.negative + j.unsatisfied.unjudged, 16);
    // the band comes from the base's own samples at the 5th percentile, so the base itself is mostly fluent
    assert.equal(run.fluencyBand.calibrationSamples, persona.heldOutPrompts.length * 20);
    // (the plain band's rate: the preference band scores answers on a hinted request stories260K cannot read)
    assert.ok(run.curve[0].plainFluentRate >= 0.7, `base fluent ${run.curve[0].plainFluentRate}`);
    assert.equal(run.samples.length, 3 * persona.heldOutPrompts.length * 4);
    for (const p of run.curve) {
      const at = run.samples.filter((x) => x.conversations === p.conversations);
      assert.equal(at.filter((x) => x.satisfied && x.fluent).length / at.length, p.satisfiedAndFluentRate);
      assert.ok(p.distinct2 > 0 && p.distinct2 <= 1, `distinct-2 ${p.distinct2}`);
      assert.equal(p.repeatRate, repeatShare(at), 'the repeat share is that of the evaluation\'s own samples');
    }
    assert.ok(lines.some((l) => /16\/16 conversations · version 4 · held-out satisfaction \d+% · satisfied-and-fluent \d+% \(fluent \d+%; plain band \d+%, fluent \d+%\) · distinct-2 \d\.\d\d · repeats \d+% · KL/.test(l)));
    const files = await writeReport(t.dir, [run]);
    assert.deepEqual(files.map((f) => f.slice(t.dir.length + 1)), ['curve.json', 'plot.svg', 'plot.png', 'kl.svg', 'kl.png', 'summary.md', 'samples.jsonl', 'trainer.log']);
    const curve = JSON.parse(readFileSync(files[0], 'utf8'));
    assert.deepEqual(Object.keys(curve).sort(), ['baseRate', 'baseSatisfiedAndFluent', 'conversations', 'curve', 'finalKlToBase', 'finalRate',
      'finalSatisfiedAndFluent', 'fluencyBand', 'judge', 'klCoef', 'label', 'likelihoodFloor', 'loopingAnswers', 'method', 'opdMode', 'persona', 'preferenceBand', 'repeatedAnswers', 'satisfiedByTurn', 'seed', 'stable', 'steps',
      'turnsPerConversation', 'unlikelyAnswers', 'wallSeconds']);
    assert.match(readFileSync(files[1], 'utf8'), /^<svg[\s\S]*Held-out satisfaction[\s\S]*binary satisfied[\s\S]*binary sat\. &amp; fluent[\s\S]*<\/svg>$/);
    const png = readFileSync(files[2]);
    assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
    assert.equal(png.readUInt32BE(16), 760); // width from the IHDR chunk
    assert.match(readFileSync(files[3], 'utf8'), /KL\(policy ‖ base\)/);
    assert.match(readFileSync(files[5], 'utf8'), /\| binary \| \d+% \/ \d+% \|/);
    assert.match(readFileSync(files[5], 'utf8'), /\| fluent \(final; base\) \| distinct-2 \(final; base\) \|[\s\S]*\| \d+%; \d+% \| \d\.\d\d; \d\.\d\d \|/);
    const samples = readFileSync(files[6], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(samples.length, run.samples.length);
    assert.ok(samples.every((x) => typeof x.text === 'string' && typeof x.fluent === 'boolean' && typeof x.satisfied === 'boolean' && x.method === 'binary'));
    // the trainer's line for every published step
    const trainerLines = readFileSync(files[7], 'utf8').trim().split('\n');
    assert.equal(trainerLines.filter((l) => /^\[binary\] trainer: step \d+ → version \d+/.test(l)).length, run.steps, trainerLines.join('\n'));
  } finally {
    t.cleanup();
  }
});

test('through serve: the server\'s log and every sample evaluated on its versions are kept in the report folder', { timeout: 180_000 }, async () => {
  const t = tempDir();
  try {
    const { runPersonalizeViaServe } = await import('../../src/bench/personalize-serve.ts');
    const persona = loadPersona(join(PERSONAS_DIR, 'dog-lover.json'));
    const run = await runPersonalizeViaServe({
      model: STORIES, persona, conversations: 8, evalEvery: 8, evalK: 2, drainSeconds: 60, outDir: t.dir,
      serveArgs: ['--method', 'binary', '--batch-size', '2', '--reward-baseline', 'none', '--importance-cap', '1'],
    });
    assert.deepEqual(run.curve.map((p) => p.conversations), [0, 8]);
    const log = readFileSync(join(t.dir, 'serve.log'), 'utf8');
    assert.match(log, /\/v1/); // the line that names the server's address
    if (run.steps > 0) assert.match(log, /trainer: step 1 → version 1/);
    const rows = readFileSync(join(t.dir, 'serve-samples.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    // each distinct evaluated version once: its held-out prompts × k samples, with the verdicts the curve counts
    const versions = [...new Set([...run.curve.map((p) => p.policyVersion), run.afterDrain.policyVersion])];
    assert.equal(rows.length, versions.length * persona.heldOutPrompts.length * 2);
    assert.deepEqual([...new Set(rows.map((r) => r.policyVersion))], versions);
    for (const r of rows) assert.ok(r.via === 'serve' && typeof r.text === 'string' && typeof r.satisfied === 'boolean' && typeof r.fluent === 'boolean');
    const last = rows.filter((r) => r.policyVersion === run.afterDrain.policyVersion);
    assert.equal(last.filter((r) => r.satisfied && r.fluent).length / last.length, run.afterDrain.satisfiedAndFluentRate);
  } finally { t.cleanup(); }
});

test('fluency bands: a preference the base never writes even when asked gets no band of its own (the plain band holds), and says so', { timeout: 120_000 }, async () => {
  const { EmbeddedEngine } = await import('../../src/engine/embedded/engine.ts');
  const { calibrateFluency, preferenceBandNote, PREFERENCE_BAND_MIN_SAMPLES } = await import('../../src/bench/evaluate.ts');
  const engine = await EmbeddedEngine.load(STORIES);
  try {
    const base = validatePersona({ ...valid, heldOutPrompts: ['Once upon a time', 'One day'], maxTokens: 16 });
    const never = { ...base, satisfied: { includes: ['zyzzyva'] }, preference: 'The user wants a story about a zyzzyva.' };
    const bands = await calibrateFluency(engine, never, 1);
    assert.ok(Number.isFinite(bands.plain.lower), 'the plain band is drawn');
    assert.equal(bands.preference, null);
    assert.equal(bands.preferenceSamples, 0);
    assert.match(preferenceBandNote(bands, never, 1)!, /satisfied it in 0 of 40 samples \(fewer than 20\): satisfying samples are held to the plain band/);
    // a preference the base writes all the time has its band, and nothing to say
    const always = { ...base, satisfied: { minWords: 0 }, preference: 'The user wants a story.' };
    const drawn = await calibrateFluency(engine, always, 1);
    assert.ok(drawn.preference && Number.isFinite(drawn.preference.lower));
    assert.ok(drawn.preferenceSamples! >= PREFERENCE_BAND_MIN_SAMPLES);
    assert.equal(preferenceBandNote(drawn, always, 1), null);
    assert.equal(preferenceBandNote(drawn, base, 1), null, 'no preference stated: no note');
  } finally {
    await engine.close();
  }
});
