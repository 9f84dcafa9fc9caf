// Pure sampling pieces: token choice, top-k/top-p, the seeded RNG, streaming text and stop strings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { sampleToken, topIndices, nucleus } from '../../src/engine/embedded/sampler.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { StopMatcher, IncrementalDecoder } from '../../src/engine/embedded/detokenize.ts';
import { ChatTokenizer } from '../../src/engine/embedded/tokenizer.ts';
import { STORIES } from '../helpers/models.ts';

const logits = new Float32Array([1, 3, 2, 0.5, 3, -1]); // ties at ids 1 and 4

test('topIndices returns the k largest, largest first, ties broken by lower id', () => {
  const table: [number, number[]][] = [[1, [1]], [2, [1, 4]], [3, [1, 4, 2]], [6, [1, 4, 2, 0, 3, 5]], [9, [1, 4, 2, 0, 3, 5]]];
  for (const [k, expected] of table) assert.deepEqual(topIndices(logits, 0, logits.length, k), expected, `k=${k}`);
});

test('nucleus keeps the smallest most-likely prefix whose mass reaches top_p, after top_k', () => {
  // probabilities of [1,3,2,0.5,3,-1] at T=1
  const z = Math.log([...logits].reduce((a, x) => a + Math.exp(x), 0));
  const lp = (id: number) => logits[id] - z; // p ≈ [.054, .40, .147, .033, .40, .0073]
  const table: [number, number, number[]][] = [
    [1, 0, [1, 4, 2, 0, 3, 5]],
    [0.3, 0, [1]],
    [0.5, 0, [1, 4]],
    [0.9, 0, [1, 4, 2]],
    [0.99, 0, [1, 4, 2, 0, 3]],
    [1, 2, [1, 4]],
    [0.99, 3, [1, 4, 2]],
  ];
  for (const [topP, topK, expected] of table) assert.deepEqual(nucleus(logits, 0, logits.length, { temperature: 1, topP, topK }, lp), expected, `top_p=${topP} top_k=${topK}`);
});

test('greedy picks the argmax and reports its T=1 log-prob; sampling reports log softmax(logits/T)', () => {
  const rng = new Rng(1);
  const g = sampleToken(logits, 0, 6, { temperature: 0, topP: 1, topK: 0 }, () => rng.next());
  assert.equal(g.id, 1);
  const z1 = Math.log([...logits].reduce((a, x) => a + Math.exp(x), 0));
  assert.ok(Math.abs(g.logprob - (3 - z1)) < 1e-12);
  for (let i = 0; i < 50; i++) {
    const s = sampleToken(logits, 0, 6, { temperature: 0.5, topP: 0.9, topK: 0 }, () => rng.next());
    const zT = Math.log([...logits].reduce((a, x) => a + Math.exp(x / 0.5), 0));
    assert.ok([1, 4].includes(s.id), `id ${s.id} is outside the 0.9 nucleus at T=0.5`);
    assert.ok(Math.abs(s.logprob - (logits[s.id] / 0.5 - zT)) < 1e-12);
  }
});

test('sampling frequencies follow the distribution (chi-square-free check with a wide margin)', () => {
  const rng = new Rng(123);
  const counts = new Array(6).fill(0);
  const n = 20000;
  for (let i = 0; i < n; i++) counts[sampleToken(logits, 0, 6, { temperature: 1, topP: 1, topK: 0 }, () => rng.next()).id]++;
  const z = [...logits].reduce((a, x) => a + Math.exp(x), 0);
  for (let id = 0; id < 6; id++) {
    const p = Math.exp(logits[id]) / z;
    assert.ok(Math.abs(counts[id] / n - p) < 4 * Math.sqrt((p * (1 - p)) / n) + 1e-3, `id ${id}: ${counts[id] / n} vs ${p}`);
  }
});

test('the RNG is deterministic per seed and uniform in [0, 1)', () => {
  const a = new Rng(99), b = new Rng(99), c = new Rng(100);
  const xa = Array.from({ length: 5 }, () => a.next()), xb = Array.from({ length: 5 }, () => b.next()), xc = Array.from({ length: 5 }, () => c.next());
  assert.deepEqual(xa, xb);
  assert.notDeepEqual(xa, xc);
  const r = new Rng(5);
  let sum = 0;
  for (let i = 0; i < 10000; i++) { const x = r.next(); assert.ok(x >= 0 && x < 1); sum += x; }
  assert.ok(Math.abs(sum / 10000 - 0.5) < 0.02);
});

test('stop strings: matched across deltas, cut from the text, and a possible prefix is held back until resolved', () => {
  const m = new StopMatcher(['END', '\n\n']);
  assert.equal(m.push('Hello E'), 'Hello '); // 'E' might start END
  assert.equal(m.push('x'), 'Ex'); // it did not
  assert.equal(m.push(' fine\n'), ' fine'); // '\n' might start '\n\n'
  assert.equal(m.push('\nmore'), ''); // it did: stop
  assert.equal(m.matched, '\n\n');
  assert.equal(m.fullText, 'Hello Ex fine');
  assert.equal(m.push('ignored'), '');
  const n = new StopMatcher(['END']);
  assert.equal(n.push('abcEN'), 'abc');
  assert.equal(n.flush(), 'EN');
  assert.equal(n.matched, null);
  const none = new StopMatcher([]);
  assert.equal(none.push('anything'), 'anything');
});

test('incremental decoding: deltas add up to the full decode, keep leading spaces, and hold back incomplete UTF-8', () => {
  const tok = ChatTokenizer.load(STORIES);
  const prompt = tok.encode('Once upon a time');
  const text = ' there was a café 😊 ok';
  const ids = tok.encode('Once upon a time' + text).slice(prompt.length);
  const dec = new IncrementalDecoder(tok, prompt);
  const deltas = ids.map((id) => dec.push(id));
  assert.equal(deltas.join('') + dec.flush(), text);
  assert.equal(deltas[0], ' there');
  // the emoji is 4 byte-fallback tokens: the first three produce no text
  assert.ok(deltas.some((d) => d.includes('😊')));
  assert.ok(!deltas.some((d) => d.includes('\uFFFD')));
});
