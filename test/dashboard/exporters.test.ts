// The exporters and small pieces of experiment tracking: TensorBoard event files (read back with an
// independent TFRecord + protobuf reader written here from the format's description), the report's
// SVG charts, terminal sparklines, and eval-file parsing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { crc32c, TensorBoardWriter } from '../../src/dashboard/tensorboard.ts';
import { MetricsLog } from '../../src/dashboard/metrics-log.ts';
import { renderReport } from '../../src/dashboard/report.ts';
import { sparkline } from '../../src/dashboard/sparkline.ts';
import { parseEvalFile, EvalFileError } from '../../src/trainer/evaluation.ts';
import type { StepRecord } from '../../src/trainer/loop.ts';
import { tempDir } from '../helpers/models.ts';

// ---- an independent reader: TFRecord framing, then the protobuf wire format ----

function unmask(masked: number): number {
  const rot = (masked - 0xa282ead8) >>> 0;
  return ((rot << 15) | (rot >>> 17)) >>> 0;
}

function readRecords(buf: Buffer): Buffer[] {
  const out: Buffer[] = [];
  let p = 0;
  while (p < buf.length) {
    const lenBytes = buf.subarray(p, p + 8);
    const len = Number(buf.readBigUInt64LE(p));
    assert.equal(unmask(buf.readUInt32LE(p + 8)), crc32c(lenBytes), 'length CRC');
    const data = buf.subarray(p + 12, p + 12 + len);
    assert.equal(unmask(buf.readUInt32LE(p + 12 + len)), crc32c(data), 'data CRC');
    out.push(data);
    p += 12 + len + 4;
  }
  assert.equal(p, buf.length, 'no trailing bytes');
  return out;
}

type Field = { field: number; wire: number; value: bigint | Buffer };
function readVarint(b: Buffer, p: number): [bigint, number] {
  let v = 0n, shift = 0n;
  for (;;) { const x = b[p++]; v |= BigInt(x & 0x7f) << shift; shift += 7n; if (!(x & 0x80)) return [v, p]; }
}
function fields(b: Buffer): Field[] {
  const out: Field[] = [];
  let p = 0;
  while (p < b.length) {
    const [key, p1] = readVarint(b, p);
    const field = Number(key >> 3n), wire = Number(key & 7n);
    if (wire === 0) { const [v, p2] = readVarint(b, p1); out.push({ field, wire, value: v }); p = p2; }
    else if (wire === 1) { out.push({ field, wire, value: b.subarray(p1, p1 + 8) }); p = p1 + 8; }
    else if (wire === 5) { out.push({ field, wire, value: b.subarray(p1, p1 + 4) }); p = p1 + 4; }
    else if (wire === 2) { const [len, p2] = readVarint(b, p1); out.push({ field, wire, value: b.subarray(p2, p2 + Number(len)) }); p = p2 + Number(len); }
    else throw new Error(`unexpected wire type ${wire}`);
  }
  return out;
}

interface Event { wallTime: number; step: number; fileVersion?: string; scalars: Record<string, number> }
function readEvents(file: string): Event[] {
  return readRecords(readFileSync(file)).map((rec) => {
    const e: Event = { wallTime: 0, step: 0, scalars: {} };
    for (const f of fields(rec)) {
      if (f.field === 1) e.wallTime = (f.value as Buffer).readDoubleLE(0);
      else if (f.field === 2) e.step = Number(f.value);
      else if (f.field === 3) e.fileVersion = (f.value as Buffer).toString('utf8');
      else if (f.field === 5) for (const v of fields(f.value as Buffer).filter((x) => x.field === 1)) {
        const vf = fields(v.value as Buffer);
        const tag = (vf.find((x) => x.field === 1)!.value as Buffer).toString('utf8');
        e.scalars[tag] = (vf.find((x) => x.field === 2)!.value as Buffer).readFloatLE(0);
      }
    }
    return e;
  });
}

const step = (n: number, extra: Partial<StepRecord> = {}): StepRecord => ({
  step: n, status: 'published', version: n, samples: 4, tokens: 60, loss: 0.5 / n, rewardMean: -0.5 + n * 0.1, clipFraction: 0.01 * n, kl: null,
  teacherGap: null, gradNorm: 0.3, stalenessMean: 0, durationMs: 100, ...extra,
});

test('CRC-32C matches the published check value', () => {
  assert.equal(crc32c(Buffer.from('123456789')), 0xe3069283);
  assert.equal(crc32c(Buffer.alloc(0)), 0);
});

test('TensorBoard event files: a file-version event, then one event per published step and evaluation, with the scalars of metrics.jsonl', () => {
  const t = tempDir('ocrl-tb-');
  try {
    const tb = new TensorBoardWriter(join(t.dir, 'tb'));
    const log = new MetricsLog(t.dir, [tb]);
    log.step(step(1));
    log.step({ ...step(2), status: 'rejected', step: null, version: null });
    log.step(step(2, { kl: 0.0125 }));
    log.eval({ step: 2, version: 2, prompts: 3, samples: 6, judgeSatisfaction: 0.5, judgeScoreMean: 0.25, ruleSatisfaction: null, meanTokens: 12, durationMs: 50 });
    log.close();
    const files = readdirSync(join(t.dir, 'tb'));
    assert.equal(files.length, 1);
    assert.match(files[0], /^events\.out\.tfevents\.\d+\./);
    const events = readEvents(join(t.dir, 'tb', files[0]));
    assert.equal(events[0].fileVersion, 'brain.Event:2');
    assert.equal(events.length, 4, 'the rejected step writes no event');
    assert.equal(events[1].step, 1);
    assert.ok(Math.abs(events[1].scalars['train/loss'] - 0.5) < 1e-6);
    assert.ok(Math.abs(events[1].scalars['train/reward_mean'] - -0.4) < 1e-6);
    assert.equal(events[1].scalars['train/kl_to_base'], undefined, 'null values are left out');
    assert.ok(Math.abs(events[2].scalars['train/kl_to_base'] - 0.0125) < 1e-6);
    assert.deepEqual(events[3].scalars, { 'eval/judge_satisfaction': 0.5, 'eval/judge_score_mean': 0.25, 'eval/mean_tokens': 12 });
    assert.ok(Math.abs(events[1].wallTime - Date.now() / 1000) < 60);
    // metrics.jsonl holds every line, the rejected step included
    assert.equal(readFileSync(join(t.dir, 'metrics.jsonl'), 'utf8').trim().split('\n').length, 4);
  } finally {
    t.cleanup();
  }
});

test('report: one SVG chart per quantity with data; held-out evaluations join the reward chart; rollbacks do not fold the x axis back', () => {
  const t = tempDir('ocrl-report-');
  try {
    const log = new MetricsLog(t.dir);
    for (let i = 1; i <= 3; i++) log.step(step(i));
    log.rollback({ target: 1, version: 4, step: 1, fromVersion: 3, fromStep: 3, samplesSetAside: 8 });
    log.step(step(2, { version: 5 }));
    log.eval({ step: 2, version: 5, prompts: 2, samples: 4, judgeSatisfaction: null, judgeScoreMean: null, ruleSatisfaction: 0.75, meanTokens: 10, durationMs: 5 });
    const charts = renderReport(log.since(0).lines);
    assert.deepEqual(charts.map((c) => c.name), ['reward', 'loss', 'clip-fraction']);
    const reward = charts[0];
    assert.equal(reward.points, 4);
    assert.match(reward.svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.match(reward.svg, /held-out rule rate/);
    assert.equal((reward.svg.match(/<polyline/g) ?? []).length, 2);
    // x grows through the rollback: 4 distinct x positions on the training curve
    const xs = /<polyline points="([^"]+)"/.exec(reward.svg)![1].split(' ').map((p) => Number(p.split(',')[0]));
    assert.deepEqual([...xs].sort((a, b) => a - b), xs);
    assert.equal(new Set(xs).size, 4);
  } finally {
    t.cleanup();
  }
});

test('sparklines scale a series to its range; gaps stay blank; a flat series sits mid-height', () => {
  const cases: [(number | null)[], number, string][] = [
    [[0, 1, 2, 3, 4, 5, 6, 7], 40, '▁▂▃▄▅▆▇█'],
    [[1, null, 3], 40, '▁ █'],
    [[2, 2, 2], 40, '▄▄▄'],
    [[0, 1, 2, 3], 2, '▁█'],
    [[], 40, ''],
    [[null, NaN], 40, ''],
  ];
  for (const [xs, width, want] of cases) assert.equal(sparkline(xs, width), want, JSON.stringify(xs));
});

test('eval files: prompts or messages, optional criteria and rule; each mistake is named by line and field', () => {
  const items = parseEvalFile([
    '{"prompt": "Tell me a story", "criteria": "a story about a dog", "satisfied": {"includes": ["dog"]}}',
    '',
    '{"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]}',
  ].join('\n'), 'p.jsonl');
  assert.equal(items.length, 2);
  assert.deepEqual(items[0], { messages: [{ role: 'user', content: 'Tell me a story' }], criteria: 'a story about a dog', satisfied: { includes: ['dog'] } });
  assert.equal(items[1].criteria, null);
  const bad: [string, RegExp][] = [
    ['not json', /p.jsonl line 1 is not JSON/],
    ['[1]', /line 1 must be a JSON object/],
    ['{"prompt": ""}', /needs "prompt"/],
    ['{"messages": [{"role": "tool", "content": "x"}]}', /needs "prompt"/],
    ['{"prompt": "x", "criteria": 3}', /"criteria" must be a string/],
    ['{"prompt": "x", "satisfied": {"includes": "dog"}}', /line 1: satisfied.includes must be an array/],
    ['\n\n', /has no items/],
  ];
  for (const [text, re] of bad) assert.throws(() => parseEvalFile(text, 'p.jsonl'), (e: Error) => e instanceof EvalFileError && re.test(e.message), text);
});
