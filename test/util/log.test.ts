// Structured logging: levels filter, JSON lines for collectors, text lines for people.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, formatText } from '../../src/util/log.ts';

const capture = () => { const lines: string[] = []; return { lines, out: { write: (s: string) => { lines.push(s); } } }; };

test('JSON format: one object per line with the level number, time, message and fields; levels below the threshold are dropped', () => {
  const c = capture();
  const log = createLogger({ level: 'info', format: 'json', out: c.out });
  log.debug('hidden');
  log.info('serving', { port: 30000 });
  log.child({ component: 'judge' }).warn('judge unreachable', { failures: 2 });
  log.error('broken');
  const rows = c.lines.map((l) => JSON.parse(l));
  assert.deepEqual(rows.map((r) => [r.level, r.msg]), [[30, 'serving'], [40, 'judge unreachable'], [50, 'broken']]);
  assert.equal(rows[0].port, 30000);
  assert.deepEqual([rows[1].component, rows[1].failures], ['judge', 2]);
  assert.ok(rows.every((r) => typeof r.time === 'number' && typeof r.pid === 'number'));
});

test('text format: time, level, component, message, then fields as key=value', () => {
  const table: [Record<string, unknown>, RegExp][] = [
    [{ level: 30, time: 0, pid: 1, msg: 'serving at http://127.0.0.1:1/v1' }, /^1970-01-01T00:00:00\.000Z INFO  serving at http:\/\/127\.0\.0\.1:1\/v1\n$/],
    [{ level: 40, time: 0, pid: 1, component: 'judge', msg: 'unreachable', failures: 3, url: 'http://x:9' }, /WARN  judge: unreachable failures=3 url=http:\/\/x:9\n$/],
    [{ level: 50, time: 0, pid: 1, msg: 'x', detail: 'two words' }, /ERROR x detail="two words"\n$/],
  ];
  for (const [obj, re] of table) assert.match(formatText(JSON.stringify(obj)), re);
  assert.equal(formatText('not json'), 'not json');
  const c = capture();
  createLogger({ level: 'warn', out: c.out }).info('dropped');
  assert.deepEqual(c.lines, []);
});
