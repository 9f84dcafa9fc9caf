// The OPD teacher prompt builder: a table of request shapes and the prompt the trainer must build.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withHint, userTextWithHint, HINT_MARKER } from '../../src/learn/hint-prompt.ts';
import { withHint as trainerWithHint } from '../../src/trainer/loop.ts';

test('the hint is appended to the last user message after the upstream marker line, and the result is stripped', () => {
  const table: [string, string, string][] = [
    ['Tell me a story.', 'The user wants a dog.', "Tell me a story.\n\n[user's hint / instruction]\nThe user wants a dog."],
    ['  Hi  ', 'Be brief.', "Hi  \n\n[user's hint / instruction]\nBe brief."],
    ['', 'Write about a cat.', "[user's hint / instruction]\nWrite about a cat."],
  ];
  for (const [text, hint, expected] of table) assert.equal(userTextWithHint(text, hint), expected);
  assert.equal(HINT_MARKER, "[user's hint / instruction]");
});

test('withHint changes only the last user message, flattens content parts and maps developer to system', () => {
  const messages = [
    { role: 'developer', content: 'Be kind.' },
    { role: 'user', content: 'First.' },
    { role: 'assistant', content: 'Answer.' },
    { role: 'user', content: [{ type: 'text', text: 'Second' }, { type: 'text', text: 'part.' }] },
  ];
  const out = withHint(messages, 'The user wants a dog.');
  assert.deepEqual(out.map((m) => m.role), ['system', 'user', 'assistant', 'user']);
  assert.equal(out[1].content, 'First.');
  assert.equal(out[3].content, "Second\npart.\n\n[user's hint / instruction]\nThe user wants a dog.");
  assert.equal(messages[3].content instanceof Array, true, 'the input is not modified');
});

test('withHint adds a user message holding only the hint when the request has none', () => {
  const out = withHint([{ role: 'system', content: 'S' }], 'Use the calculator.');
  assert.deepEqual(out.at(-1), { role: 'user', content: "[user's hint / instruction]\nUse the calculator." });
});

test('the trainer builds its teacher prompt with the same function', () => {
  assert.equal(trainerWithHint, withHint);
});
