// A long prompt is tokenized off the event loop: while a ~100k-character prompt is rendered and
// tokenized (seconds of CPU with a byte-level BPE), other clients are answered and the server's
// event loop never stalls. (Prompts over 256 characters per context token are refused before any
// tokenization: see bad-input.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startTestServer, post } from '../helpers/server.ts';

test('a 100k-character prompt is tokenized on another thread: small requests meanwhile are answered, the event loop does not stall', { timeout: 120_000 }, async () => {
  const s = await startTestServer({ contextOverflow: 'truncate' });
  try {
    const big = 'Once upon a time there was a dog. '.repeat(3000);
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    const t0 = performance.now();
    const bigRequest = post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: big }], max_tokens: 4 }).then((r) => ({ ...r, ms: performance.now() - t0 }));
    await new Promise((r) => setTimeout(r, 50));
    const small: number[] = [];
    let bigDone = false;
    void bigRequest.then(() => { bigDone = true; });
    while (!bigDone && small.length < 20) {
      const t = performance.now();
      const r = await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 2 });
      assert.equal(r.status, 200);
      small.push(performance.now() - t);
    }
    const b = await bigRequest;
    delay.disable();
    assert.equal(b.status, 200, b.text.slice(0, 200));
    assert.equal(b.json.usage.prompt_tokens < 512, true);
    const maxDelayMs = delay.max / 1e6;
    console.log(`# big prompt: ${b.ms.toFixed(0)} ms; ${small.length} small requests meanwhile (max ${Math.max(...small).toFixed(0)} ms); event loop max delay ${maxDelayMs.toFixed(0)} ms`);
    assert.ok(small.length >= 3, `only ${small.length} small requests were answered during ${b.ms.toFixed(0)} ms`);
    assert.ok(maxDelayMs < Math.max(500, b.ms / 3), `the event loop stalled for ${maxDelayMs.toFixed(0)} ms`);
  } finally {
    await s.close();
  }
});
