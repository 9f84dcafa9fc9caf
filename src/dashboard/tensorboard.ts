// TensorBoard event files, written without TensorFlow: a TFRecord file (each record: uint64 length,
// masked CRC-32C of the length, the bytes, masked CRC-32C of the bytes; all little-endian) of
// serialized `Event` protobufs — first one with file_version "brain.Event:2", then one per metrics
// line with a `Summary` of scalar values (Summary.Value.tag = 1, simple_value = 2). `tensorboard
// --logdir DIR` reads the folder as it grows.
import { appendFileSync, mkdirSync, openSync, closeSync, fsyncSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import type { MetricsLine, MetricsSink } from './metrics-log.ts';

const CRC32C_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  return t;
})();

/** CRC-32C (Castagnoli), as TFRecord uses. */
export function crc32c(bytes: Uint8Array): number {
  let c = 0xffffffff;
  for (let i = 0; i < bytes.length; i++) c = CRC32C_TABLE[(c ^ bytes[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** The TFRecord mask: rotate right by 15, add a constant (so CRCs of CRCs stay strong). */
export function maskedCrc32c(bytes: Uint8Array): number {
  const c = crc32c(bytes);
  return ((((c >>> 15) | (c << 17)) >>> 0) + 0xa282ead8) >>> 0;
}

/** One TFRecord framing of `data`. */
export function tfRecord(data: Uint8Array): Buffer {
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(data.length));
  const out = Buffer.alloc(8 + 4 + data.length + 4);
  len.copy(out, 0);
  out.writeUInt32LE(maskedCrc32c(len), 8);
  out.set(data, 12);
  out.writeUInt32LE(maskedCrc32c(data), 12 + data.length);
  return out;
}

// ---- the few protobuf encodings an Event needs ----

function varint(n: bigint | number): number[] {
  let v = BigInt.asUintN(64, BigInt(n));
  const out: number[] = [];
  while (v >= 0x80n) { out.push(Number(v & 0x7fn) | 0x80); v >>= 7n; }
  out.push(Number(v));
  return out;
}
const key = (field: number, wire: number) => varint((field << 3) | wire);
const lengthDelimited = (field: number, bytes: Uint8Array) => [...key(field, 2), ...varint(bytes.length), ...bytes];

function scalarValue(tag: string, value: number): number[] {
  const f = Buffer.alloc(4);
  f.writeFloatLE(value);
  return [...lengthDelimited(1, Buffer.from(tag, 'utf8')), ...key(2, 5), ...f];
}

/** A serialized Event: wall time (s), step, and either the file version or scalar summaries. */
export function encodeEvent(wallTime: number, step: number, what: { fileVersion: string } | { scalars: [string, number][] }): Uint8Array {
  const t = Buffer.alloc(8);
  t.writeDoubleLE(wallTime);
  const parts: number[] = [...key(1, 1), ...t, ...key(2, 0), ...varint(step)];
  if ('fileVersion' in what) parts.push(...lengthDelimited(3, Buffer.from(what.fileVersion, 'utf8')));
  else {
    const summary = what.scalars.flatMap(([tag, v]) => lengthDelimited(1, Uint8Array.from(scalarValue(tag, v))));
    parts.push(...lengthDelimited(5, Uint8Array.from(summary)));
  }
  return Uint8Array.from(parts);
}

const STEP_TAGS: [string, keyof Extract<MetricsLine, { event: 'step' }>][] = [
  ['train/reward_mean', 'rewardMean'], ['train/loss', 'loss'], ['train/kl_to_base', 'kl'], ['train/clip_fraction', 'clipFraction'],
  ['train/teacher_behaviour_gap', 'teacherGap'], ['train/grad_norm', 'gradNorm'], ['train/staleness_mean', 'stalenessMean'],
  ['train/samples', 'samples'], ['train/tokens', 'tokens'], ['train/version', 'version'],
];
const EVAL_TAGS: [string, keyof Extract<MetricsLine, { event: 'eval' }>][] = [
  ['eval/judge_satisfaction', 'judgeSatisfaction'], ['eval/judge_score_mean', 'judgeScoreMean'], ['eval/rule_satisfaction', 'ruleSatisfaction'], ['eval/mean_tokens', 'meanTokens'],
];

/** Scalars of a metrics line, by TensorBoard tag (nulls and non-numbers left out). */
export function scalarsOf(line: MetricsLine): [string, number][] {
  const pick = <T extends MetricsLine>(l: T, tags: [string, keyof T][]) =>
    tags.map(([tag, k]) => [tag, l[k]] as [string, unknown]).filter((e): e is [string, number] => typeof e[1] === 'number' && Number.isFinite(e[1]));
  if (line.event === 'step') return line.status === 'published' ? pick(line, STEP_TAGS) : [];
  if (line.event === 'eval') return pick(line, EVAL_TAGS);
  return [['train/rollback_to_version', line.target]];
}

/** Writes metrics lines as a TensorBoard event file in `dir` (a new file per process, as TensorBoard expects). */
export class TensorBoardWriter implements MetricsSink {
  readonly file: string;
  constructor(dir: string) {
    mkdirSync(dir, { recursive: true });
    const now = Date.now() / 1000;
    this.file = join(dir, `events.out.tfevents.${Math.floor(now)}.${hostname()}.${process.pid}.openclaw-rl`);
    appendFileSync(this.file, tfRecord(encodeEvent(now, 0, { fileVersion: 'brain.Event:2' })));
  }

  write(line: MetricsLine): void {
    const scalars = scalarsOf(line);
    if (!scalars.length) return;
    appendFileSync(this.file, tfRecord(encodeEvent(Date.parse(line.time) / 1000, line.step ?? 0, { scalars })));
  }

  close(): void {
    const fd = openSync(this.file, 'r+');
    try { fsyncSync(fd); } finally { closeSync(fd); }
  }
}
