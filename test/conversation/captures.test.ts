// Replaying the real OpenClaw 2026.9 request captures (../shared/reference/openclaw-requests) through
// session identity, turn classification and next-state pairing. Expected values are read off the
// captures by hand.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { resolveSession, classifyTurn } from '../../src/conversation/identity.ts';
import { pairNextState } from '../../src/conversation/next-state.ts';
import { contentText, type WireMessage } from '../../src/conversation/messages.ts';
import { MODELS_DIR } from '../helpers/models.ts';

const DIR = join(MODELS_DIR, '..', 'reference', 'openclaw-requests');
const load = (name: string) => JSON.parse(readFileSync(join(DIR, name), 'utf8')) as { headers: Record<string, string>; body: { messages: WireMessage[]; tools?: unknown[] } };
const lower = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));

test('session ids and main/side labels of every capture', () => {
  const expected: [string, string, string, 'main' | 'side', string][] = [
    // file, session id, decided by, turn type, decided by
    ['01-agent-exec-single-turn.json', '8b387cf4-8e2a-4330-ad36-7fdf3e71e22d', 'runtime_footer', 'main', 'default'],
    ['02-local-conv-a-turn1.json', 'conv-a', 'runtime_footer', 'main', 'default'],
    ['03-local-conv-a-turn3.json', 'conv-a', 'runtime_footer', 'main', 'default'],
    ['04-local-conv-b-turn2.json', 'conv-b', 'runtime_footer', 'main', 'default'],
    ['05-gateway-conv-a-turn1-plugin-and-affinity-headers.json', 'conv-a', 'header', 'main', 'header'],
    ['06-gateway-tool-call-followup.json', 'conv-tool2', 'header', 'main', 'header'],
    ['07-gateway-reasoning-model-thinking-medium.json', 'conv-think2', 'header', 'main', 'header'],
    ['08-gateway-reasoning-model-turn2-replay.json', 'conv-think2', 'header', 'main', 'header'],
    ['09-gateway-http-api-user-session-turn2.json', '77bd4a74-1a72-41e2-af0a-e212d15e27ee', 'header', 'main', 'header'],
    ['10-heartbeat-side-turn.json', '26d49f60-2d2e-4608-bdcd-0e2f051a53b7', 'header', 'side', 'header'],
    // the plugin sends an empty X-Session-Id on compaction calls: the affinity header (no ":0" here) decides
    ['11-compaction-summary-side-call.json', 'conv-a', 'affinity', 'side', 'header'],
  ];
  for (const [file, id, idSource, type, typeSource] of expected) {
    const c = load(file);
    assert.deepEqual(resolveSession(lower(c.headers), c.body), { id, source: idSource }, file);
    assert.deepEqual(classifyTurn(lower(c.headers), c.body), { type, source: typeSource }, file);
  }
});

test('without the plugin headers: affinity headers, then prompt_cache_key, strip the ":0" counter; heuristics find side turns', () => {
  const c5 = load('05-gateway-conv-a-turn1-plugin-and-affinity-headers.json');
  const noPlugin = lower(c5.headers);
  delete noPlugin['x-session-id']; delete noPlugin['x-turn-type'];
  assert.deepEqual(resolveSession(noPlugin, c5.body), { id: 'conv-a', source: 'affinity' });
  assert.deepEqual(resolveSession({}, { ...c5.body, prompt_cache_key: 'conv-a:0' } as never), { id: 'conv-a', source: 'prompt_cache_key' });
  assert.deepEqual(classifyTurn(noPlugin, c5.body), { type: 'main', source: 'default' });
  const c10 = load('10-heartbeat-side-turn.json');
  assert.deepEqual(classifyTurn({}, c10.body), { type: 'side', source: 'heartbeat' });
  const c11 = load('11-compaction-summary-side-call.json');
  assert.deepEqual(classifyTurn({}, c11.body), { type: 'side', source: 'compaction' });
  // an unknown client: body `user`, and failing that a fingerprint of the conversation's opening
  const plain = { messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] };
  assert.deepEqual(resolveSession({}, { ...plain, user: 'alice' }), { id: 'alice', source: 'body_user' });
  const fp = resolveSession({}, plain);
  assert.equal(fp.source, 'fingerprint');
  assert.equal(resolveSession({}, { messages: [...plain.messages, { role: 'assistant', content: 'Hello' }, { role: 'user', content: 'More' }] }).id, fp.id);
});

test('next state: the user reply after our answer, never the internal-context block (conv-a turn 1 → turn 3 capture)', () => {
  const turn1 = load('02-local-conv-a-turn1.json').body.messages;
  const turn3 = load('03-local-conv-a-turn3.json').body.messages;
  const ours = { content: contentText(turn3.find((m) => m.role === 'assistant')!.content), toolCalls: [] };
  const p = pairNextState(turn1, ours, turn3);
  assert.equal(p.status, 'paired');
  if (p.status !== 'paired') return;
  assert.equal(p.role, 'user');
  assert.deepEqual(p.nextState.map((m) => contentText(m.content)), ['[Sun 2026-11-22 01:42 UTC] What is my name?']);
  // the upstream mistake: taking the last message would have given the internal block
  assert.match(contentText(turn3.at(-1)!.content), /^<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>/);
});

test('next state of a tool call: all tool results, even when the client rewrote the call id (capture 06)', () => {
  const followUp = load('06-gateway-tool-call-followup.json').body.messages;
  const firstRequest = [followUp[0], followUp[1], followUp.at(-1)!]; // system, user, internal block
  const ours = { content: '', toolCalls: [{ name: 'read', arguments: '{"path": "HELLO.txt"}' }] };
  const p = pairNextState(firstRequest, ours, followUp);
  assert.equal(p.status, 'paired');
  if (p.status !== 'paired') return;
  assert.equal(p.role, 'tool');
  assert.deepEqual(p.nextState.map((m) => [m.role, contentText(m.content), m.tool_call_id]), [['tool', 'The secret word is PINEAPPLE.\n', 'callmock2']]);
  // parallel calls: every result is kept
  const parallel = [...firstRequest.slice(0, 2),
    { role: 'assistant', content: null, tool_calls: [{ id: 'a', function: { name: 'read', arguments: '{"path":"A"}' } }, { id: 'b', function: { name: 'read', arguments: '{"path":"B"}' } }] },
    { role: 'tool', content: 'A!', tool_call_id: 'a' }, { role: 'tool', content: 'B!', tool_call_id: 'b' }, firstRequest[2]];
  const pp = pairNextState(firstRequest, { content: '', toolCalls: [{ name: 'read', arguments: '{"path":"A"}' }, { name: 'read', arguments: '{"path":"B"}' }] }, parallel);
  assert.equal(pp.status === 'paired' && pp.nextState.length, 2);
});

test('no pairing when the history does not continue with our answer, with the reason', () => {
  const turn1 = load('02-local-conv-a-turn1.json').body.messages;
  const turn3 = load('03-local-conv-a-turn3.json').body.messages;
  const regenerated = pairNextState(turn1, { content: 'a different answer', toolCalls: [] }, turn3);
  assert.deepEqual(regenerated, { status: 'unpaired', reason: 'the assistant message in the history differs from our answer (regenerated or edited)' });
  const edited = turn3.map((m, i) => (i === 1 ? { ...m, content: 'edited first message' } : m));
  assert.equal(pairNextState(turn1, { content: 'x', toolCalls: [] }, edited).status, 'unpaired');
  const conversationB = load('04-local-conv-b-turn2.json').body.messages;
  assert.match((pairNextState(turn1, { content: 'x', toolCalls: [] }, conversationB) as { reason: string }).reason, /history differs at message 1/);
});
