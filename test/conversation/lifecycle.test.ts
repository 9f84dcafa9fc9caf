// Session lifecycle: idle timeout, shutdown, and a bounded number of open sessions.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Store } from '../../src/store/store.ts';
import { SessionTracker } from '../../src/conversation/tracker.ts';
import { tempDir } from '../helpers/models.ts';

const t = tempDir('ocrl-life-');
after(t.cleanup);
const start = (sessionId: string) => ({ sessionId, idSource: 'header', turnType: 'main' as const, typeSource: 'header', request: { messages: [] }, promptIds: [1], policyVersion: 0 });
const done = { status: 'complete' as const, responseIds: [2], responseLogprobs: [-1], responseText: 'x', answer: { content: 'x', reasoning: null, toolCalls: [] }, finishReason: 'stop', policyVersion: 0 };

test('idle sessions end after the timeout; their last turn gets no next state; shutdown ends the rest; the map is capped without ending active sessions', async () => {
  const store = new Store(t.dir);
  // a long timeout, so the tracker's own periodic sweep stays out of the way; the test sweeps with an explicit clock
  const tracker = new SessionTracker(store, { idleMs: 10_000, maxOpen: 3 });
  try {
    for (const s of ['a', 'b']) { const id = store.beginTurn(start(s)); store.finishTurn(id, done); tracker.touch(s); }
    const seenA = Date.now();
    await new Promise((r) => setTimeout(r, 30));
    tracker.touch('b'); // b stays active
    tracker.sweep(seenA + 10_000 + 10);
    const ended = Object.fromEntries(store.sessions().map((s) => [s.id, s.end_reason]));
    assert.equal(ended.a, 'idle');
    assert.equal(ended.b, null);
    assert.equal(store.turns('a')[0].next_state_status, 'none');
    assert.match(store.turns('a')[0].next_state_reason!, /session ended \(idle\)/);
    assert.equal(store.turns('b')[0].next_state_status, 'pending');
    // at most three sessions tracked: the least recently seen is forgotten to make room, but not ended —
    // it may still be active, so its last turn keeps waiting for its next state
    for (const s of ['c', 'd', 'e']) { store.beginTurn(start(s)); tracker.touch(s); }
    assert.equal(tracker.openSessions, 3);
    assert.equal(store.sessions().find((s) => s.id === 'b')!.end_reason, null);
    assert.equal(store.turns('b')[0].next_state_status, 'pending');
    tracker.shutdown();
    assert.equal(tracker.openSessions, 0);
    // shutdown ends every open session, the forgotten one included
    assert.deepEqual(store.sessions().filter((s) => ['b', 'c', 'd', 'e'].includes(s.id)).map((s) => s.end_reason), ['shutdown', 'shutdown', 'shutdown', 'shutdown']);
  } finally {
    tracker.shutdown();
    store.close();
  }
});
