// The redactor, kind by kind: every example secret goes, its surroundings stay readable, ordinary
// text is untouched, and redacting twice changes nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { redactSecrets, redactDeep, looksRandom, REDACTED } from '../../src/store/redact.ts';
import { SECRET_CASES, ORDINARY } from './secrets.ts';

test(`${SECRET_CASES.length} kinds of secret are redacted from plain text`, () => {
  assert.ok(new Set(SECRET_CASES.map((c) => c.kind)).size >= 25);
  for (const c of SECRET_CASES) {
    const out = redactSecrets(c.text);
    assert.ok(!out.includes(c.secret), `${c.kind}: ${out}`);
    assert.ok(out.includes(REDACTED), `${c.kind}: ${out}`);
    assert.equal(redactSecrets(out), out, `${c.kind}: redacting twice changes nothing`);
  }
});

test('each secret is also redacted inside JSON values, keys and serialized JSON text', () => {
  for (const c of SECRET_CASES) {
    const value = { messages: [{ role: 'user', content: c.text }], tool: { arguments: JSON.stringify({ note: c.text }) }, [c.text]: 1 };
    const out = JSON.stringify(redactDeep(value));
    assert.ok(!out.includes(c.secret), `${c.kind}: ${out}`);
    assert.ok(!redactSecrets(JSON.stringify(value)).includes(c.secret), `${c.kind} (serialized)`);
  }
});

test('ordinary text is left alone', () => {
  for (const text of ORDINARY) assert.equal(redactSecrets(text), text);
  assert.deepEqual(redactDeep({ a: ORDINARY, n: 3, b: null }), { a: ORDINARY, n: 3, b: null });
});

test('entropy check: generated-looking tokens yes; words, identifiers, paths and UUIDs no', () => {
  for (const s of ['Qm9X4tLr8ZpV2nW7sK3yH6jD1cF5gB0a', '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b']) assert.ok(looksRandom(s), s);
  for (const s of ['antidisestablishmentarianism', 'node_modules_openclaw_rl_readme', '123e4567-e89b-12d3-a456-426614174000', 'short1A']) assert.ok(!looksRandom(s), s);
});
