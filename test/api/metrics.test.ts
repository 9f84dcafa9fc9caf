// GET /metrics as Prometheus reads it: every series declared with HELP and TYPE, every *_total a counter,
// histograms complete, and the process and event-loop metrics present and moving.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startTestServer, post } from '../helpers/server.ts';

/** Checks the text exposition format; returns the value of each sample by its full name (with labels). */
export function parseExposition(text: string): Map<string, number> {
  const types = new Map<string, string>(), helps = new Set<string>(), samples = new Map<string, number>();
  for (const line of text.trim().split('\n')) {
    const meta = /^# (HELP|TYPE) (\w+) (.+)$/.exec(line);
    if (meta) {
      if (meta[1] === 'HELP') helps.add(meta[2]);
      else { assert.ok(!types.has(meta[2]), `${meta[2]} declared twice`); types.set(meta[2], meta[3]); }
      continue;
    }
    const m = /^(\w+)(\{[^}]*\})? (-?[\d.e+-]+|NaN|\+Inf)$/.exec(line);
    assert.ok(m, `not a sample line: ${line}`);
    const family = types.has(m[1]) ? m[1] : m[1].replace(/_(bucket|sum|count)$/, '');
    assert.ok(types.has(family), `${m[1]} has no TYPE`);
    assert.ok(helps.has(family), `${m[1]} has no HELP`);
    if (m[1].endsWith('_total')) assert.equal(types.get(family), 'counter', `${m[1]} must be a counter`);
    if (types.get(family) === 'histogram') assert.ok(/_(bucket|sum|count)$/.test(m[1]), m[1]);
    samples.set(m[1] + (m[2] ?? ''), Number(m[3]));
  }
  return samples;
}

test('every series is declared, *_total series are counters, and process and event-loop metrics are there', async () => {
  const s = await startTestServer();
  try {
    await post(`${s.url}/v1/chat/completions`, { model: 'stories', messages: [{ role: 'user', content: 'Once' }], max_tokens: 4 });
    await fetch(`${s.url}/metrics`); // the event-loop delay is reported since the previous scrape
    const until = Date.now() + 300;
    while (Date.now() < until) { /* block the event loop for 300 ms */ }
    await new Promise((r) => setTimeout(r, 50));
    const m = parseExposition(await (await fetch(`${s.url}/metrics`)).text());
    assert.equal(m.get('openclaw_rl_requests_total{status="200"}'), 1);
    assert.ok(m.get('openclaw_rl_completion_tokens_total')! >= 1);
    assert.ok(m.get('process_cpu_seconds_total')! > 0);
    assert.ok(m.get('process_resident_memory_bytes')! > 10 * 2 ** 20);
    assert.ok(m.get('nodejs_heap_size_used_bytes')! > 0);
    assert.ok(m.get('process_start_time_seconds')! <= Date.now() / 1000);
    assert.ok(m.get('nodejs_eventloop_lag_max_seconds')! >= 0.25, `a 300 ms block shows as lag (${m.get('nodejs_eventloop_lag_max_seconds')})`);
    assert.equal(m.get(`nodejs_version_info{version="${process.version}",major="${process.versions.node.split('.')[0]}"}`), 1);
  } finally {
    await s.close();
  }
});
