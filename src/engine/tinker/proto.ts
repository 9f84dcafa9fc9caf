// Protobuf codec for the three binary messages of the Tinker wire (package `tinker_public`, proto3):
// ForwardBackwardRequest (client → server body of /forward_backward), SampleResponse and
// ForwardBackwardOutput (results of retrieve_future when the client accepts
// application/x-protobuf). Hand-written from the field table in the protocol notes: varints,
// length-delimited fields, and packed little-endian arrays in `bytes` fields. Decoders skip unknown
// fields, so newer senders that add fields still decode.
import type { WireDatum, WireTensor, ForwardBackwardInput, SampleResult, ForwardBackwardResult } from './wire.ts';

// ---- low level ----

const WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5;

class Writer {
  private chunks: Uint8Array[] = [];
  private size = 0;

  private push(b: Uint8Array): void { this.chunks.push(b); this.size += b.length; }

  varint(v: number | bigint): void {
    let x = BigInt.asUintN(64, BigInt(v));
    const out: number[] = [];
    while (x >= 0x80n) { out.push(Number(x & 0x7fn) | 0x80); x >>= 7n; }
    out.push(Number(x));
    this.push(Uint8Array.from(out));
  }

  tag(field: number, wire: number): void { this.varint((field << 3) | wire); }

  bytes(field: number, b: Uint8Array): void { this.tag(field, WIRE_LEN); this.varint(b.length); this.push(b); }

  string(field: number, s: string): void { this.bytes(field, new TextEncoder().encode(s)); }

  /** proto3 scalars are omitted at their default (0 / false / '') */
  uint(field: number, v: number | bigint): void { if (v !== 0 && v !== 0n) { this.tag(field, WIRE_VARINT); this.varint(v); } }

  bool(field: number, v: boolean): void { if (v) { this.tag(field, WIRE_VARINT); this.varint(1); } }

  double(field: number, v: number): void {
    const b = new Uint8Array(8);
    new DataView(b.buffer).setFloat64(0, v, true);
    this.tag(field, WIRE_I64);
    this.push(b);
  }

  message(field: number, m: Writer): void { this.bytes(field, m.finish()); }

  packedInt64(field: number, vs: number[]): void {
    if (vs.length === 0) return;
    const w = new Writer();
    for (const v of vs) w.varint(v);
    this.bytes(field, w.finish());
  }

  finish(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const c of this.chunks) { out.set(c, o); o += c.length; }
    return out;
  }
}

type Field = { field: number; wire: number; value: bigint | Uint8Array };

/** Split a message into its fields (repeated fields appear once per occurrence). */
function readFields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n, shift = 0n;
    for (;;) {
      if (pos >= buf.length) throw new ProtoError('truncated varint');
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
      if (shift > 63n) throw new ProtoError('varint longer than 64 bits');
    }
  };
  const take = (n: number): Uint8Array => {
    if (pos + n > buf.length) throw new ProtoError('truncated field');
    const b = buf.subarray(pos, pos + n);
    pos += n;
    return b;
  };
  while (pos < buf.length) {
    const key = Number(varint());
    const field = key >>> 3, wire = key & 7;
    if (field === 0) throw new ProtoError('field number 0');
    if (wire === WIRE_VARINT) out.push({ field, wire, value: varint() });
    else if (wire === WIRE_LEN) out.push({ field, wire, value: take(Number(varint())) });
    else if (wire === WIRE_I64) out.push({ field, wire, value: take(8) });
    else if (wire === WIRE_I32) out.push({ field, wire, value: take(4) });
    else throw new ProtoError(`unsupported wire type ${wire}`);
  }
  return out;
}

export class ProtoError extends Error { override name = 'ProtoError'; }

const bytesOf = (f: Field): Uint8Array => {
  if (!(f.value instanceof Uint8Array) || f.wire !== WIRE_LEN) throw new ProtoError(`field ${f.field} should be length-delimited`);
  return f.value;
};
const numOf = (f: Field): number => {
  if (typeof f.value !== 'bigint') throw new ProtoError(`field ${f.field} should be a varint`);
  return Number(BigInt.asIntN(64, f.value));
};
const strOf = (f: Field): string => new TextDecoder().decode(bytesOf(f));
const doubleOf = (f: Field): number => {
  if (f.wire !== WIRE_I64) throw new ProtoError(`field ${f.field} should be a double`);
  const b = f.value as Uint8Array;
  return new DataView(b.buffer, b.byteOffset, 8).getFloat64(0, true);
};
/** repeated int64: packed (one LEN field) or unpacked (one varint per value) */
function int64s(fields: Field[]): number[] {
  const out: number[] = [];
  for (const f of fields) {
    if (f.wire === WIRE_VARINT) out.push(numOf(f));
    else for (const g of readPackedVarints(bytesOf(f))) out.push(g);
  }
  return out;
}
function readPackedVarints(b: Uint8Array): number[] {
  const out: number[] = [];
  let pos = 0;
  while (pos < b.length) {
    let r = 0n, s = 0n;
    for (;;) {
      if (pos >= b.length) throw new ProtoError('truncated packed varint');
      const x = b[pos++];
      r |= BigInt(x & 0x7f) << s;
      if ((x & 0x80) === 0) break;
      s += 7n;
    }
    out.push(Number(BigInt.asIntN(64, r)));
  }
  return out;
}

function view(b: Uint8Array): DataView { return new DataView(b.buffer, b.byteOffset, b.byteLength); }

function int32Bytes(vs: ArrayLike<number>): Uint8Array {
  const b = new Uint8Array(vs.length * 4), d = view(b);
  for (let i = 0; i < vs.length; i++) d.setInt32(i * 4, vs[i], true);
  return b;
}
function float32Bytes(vs: ArrayLike<number>): Uint8Array {
  const b = new Uint8Array(vs.length * 4), d = view(b);
  for (let i = 0; i < vs.length; i++) d.setFloat32(i * 4, vs[i], true);
  return b;
}
function int64Bytes(vs: ArrayLike<number>): Uint8Array {
  const b = new Uint8Array(vs.length * 8), d = view(b);
  for (let i = 0; i < vs.length; i++) d.setBigInt64(i * 8, BigInt(vs[i]), true);
  return b;
}
function readInt32s(b: Uint8Array): number[] {
  if (b.length % 4) throw new ProtoError('int32 array length is not a multiple of 4');
  const d = view(b), out = new Array<number>(b.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = d.getInt32(i * 4, true);
  return out;
}
function readFloat32s(b: Uint8Array): number[] {
  if (b.length % 4) throw new ProtoError('float32 array length is not a multiple of 4');
  const d = view(b), out = new Array<number>(b.length / 4);
  for (let i = 0; i < out.length; i++) out[i] = d.getFloat32(i * 4, true);
  return out;
}
function readInt64s(b: Uint8Array): number[] {
  if (b.length % 8) throw new ProtoError('int64 array length is not a multiple of 8');
  const d = view(b), out = new Array<number>(b.length / 8);
  for (let i = 0; i < out.length; i++) out[i] = Number(d.getBigInt64(i * 8, true));
  return out;
}
/** bfloat16 is the upper half of a float32 */
function readBfloat16s(b: Uint8Array): number[] {
  if (b.length % 2) throw new ProtoError('bfloat16 array length is odd');
  const d = view(b), f = new DataView(new ArrayBuffer(4)), out = new Array<number>(b.length / 2);
  for (let i = 0; i < out.length; i++) { f.setUint16(0, d.getUint16(i * 2, true), false); f.setUint16(2, 0); out[i] = f.getFloat32(0, false); }
  return out;
}

// ---- DType, tensors ----

export const DType = { UNSPECIFIED: 0, FLOAT32: 1, INT64: 2, INT32: 3, BFLOAT16: 4 } as const;

function tensorValues(data: Uint8Array, dtype: number): number[] {
  switch (dtype) {
    case DType.FLOAT32: return readFloat32s(data);
    case DType.INT64: return readInt64s(data);
    case DType.INT32: return readInt32s(data);
    case DType.BFLOAT16: return readBfloat16s(data);
    default: throw new ProtoError(`unsupported tensor dtype ${dtype}`);
  }
}

function encodeTensor(t: WireTensor): Writer {
  const w = new Writer();
  const dtype = t.dtype === 'int64' ? DType.INT64 : DType.FLOAT32;
  w.bytes(1, dtype === DType.INT64 ? int64Bytes(t.data) : float32Bytes(t.data));
  w.uint(3, dtype);
  w.packedInt64(4, t.shape ?? [t.data.length]);
  return w;
}

function decodeTensor(b: Uint8Array): WireTensor {
  let dense: Uint8Array | null = null, dtype = 0;
  const shape: Field[] = [];
  for (const f of readFields(b)) {
    if (f.field === 1) dense = bytesOf(f);
    else if (f.field === 2) throw new ProtoError('sparse tensors are not supported');
    else if (f.field === 3) dtype = numOf(f);
    else if (f.field === 4) shape.push(f);
  }
  const data = tensorValues(dense ?? new Uint8Array(0), dtype);
  return { data, dtype: dtype === DType.INT64 || dtype === DType.INT32 ? 'int64' : 'float32', shape: shape.length ? int64s(shape) : [data.length] };
}

function encodeMapEntry(field: number, key: string, value: (w: Writer) => void, out: Writer): void {
  const e = new Writer();
  e.string(1, key);
  value(e);
  out.message(field, e);
}

function decodeMapEntry(b: Uint8Array): { key: string; value: Field | null } {
  let key = '', value: Field | null = null;
  for (const f of readFields(b)) { if (f.field === 1) key = strOf(f); else if (f.field === 2) value = f; }
  return { key, value };
}

// ---- ForwardBackwardRequest ----

export interface ForwardBackwardRequestMessage {
  model_id: string;
  seq_id?: number;
  forward_only: boolean;
  input: ForwardBackwardInput;
}

export function encodeForwardBackwardRequest(r: ForwardBackwardRequestMessage): Uint8Array {
  const w = new Writer();
  w.string(1, r.model_id);
  w.uint(2, r.seq_id ?? 0);
  for (const d of r.input.data) w.message(3, encodeDatum(d));
  w.string(4, r.input.loss_fn);
  for (const [k, v] of Object.entries(r.input.loss_fn_config ?? {})) encodeMapEntry(5, k, (e) => e.double(2, v), w);
  w.bool(6, r.forward_only);
  return w.finish();
}

function encodeDatum(d: WireDatum): Writer {
  const w = new Writer();
  for (const c of d.model_input.chunks) {
    if (c.type !== 'encoded_text') throw new ProtoError(`chunk type ${c.type} has no encoder here (text only)`);
    const text = new Writer();
    text.bytes(1, int32Bytes(c.tokens));
    const chunk = new Writer();
    chunk.message(1, text);
    w.message(1, chunk);
  }
  for (const [k, t] of Object.entries(d.loss_fn_inputs)) encodeMapEntry(2, k, (e) => e.message(2, encodeTensor(t)), w);
  return w;
}

export function decodeForwardBackwardRequest(buf: Uint8Array): ForwardBackwardRequestMessage {
  const out: ForwardBackwardRequestMessage = { model_id: '', forward_only: false, input: { loss_fn: '', data: [] } };
  const config: Record<string, number> = {};
  for (const f of readFields(buf)) {
    if (f.field === 1) out.model_id = strOf(f);
    else if (f.field === 2) { const s = numOf(f); if (s !== 0) out.seq_id = s; }
    else if (f.field === 3) out.input.data.push(decodeDatum(bytesOf(f)));
    else if (f.field === 4) out.input.loss_fn = strOf(f);
    else if (f.field === 5) { const e = decodeMapEntry(bytesOf(f)); config[e.key] = e.value ? doubleOf(e.value) : 0; }
    else if (f.field === 6) out.forward_only = numOf(f) !== 0;
  }
  if (Object.keys(config).length) out.input.loss_fn_config = config;
  return out;
}

function decodeDatum(b: Uint8Array): WireDatum {
  const d: WireDatum = { model_input: { chunks: [] }, loss_fn_inputs: {} };
  for (const f of readFields(b)) {
    if (f.field === 1) {
      for (const c of readFields(bytesOf(f))) {
        if (c.field === 1) {
          let tokens: number[] = [];
          for (const t of readFields(bytesOf(c))) if (t.field === 1) tokens = readInt32s(bytesOf(t));
          d.model_input.chunks.push({ type: 'encoded_text', tokens });
        } else if (c.field === 2) d.model_input.chunks.push({ type: 'image' });
        else if (c.field === 3) d.model_input.chunks.push({ type: 'dmel' });
      }
    } else if (f.field === 2) {
      const e = decodeMapEntry(bytesOf(f));
      if (e.value) d.loss_fn_inputs[e.key] = decodeTensor(bytesOf(e.value));
    }
  }
  return d;
}

// ---- SampleResponse ----

export const StopReason = { STOP: 0, LENGTH: 1 } as const;

export function encodeSampleResponse(r: SampleResult): Uint8Array {
  const w = new Writer();
  for (const s of r.sequences) {
    const q = new Writer();
    q.uint(1, s.stop_reason === 'length' ? StopReason.LENGTH : StopReason.STOP);
    q.bytes(2, int32Bytes(s.tokens));
    if (s.logprobs) q.bytes(3, float32Bytes(s.logprobs));
    w.message(1, q);
  }
  if (r.prompt_logprobs) w.bytes(2, float32Bytes(r.prompt_logprobs.map((x) => (x === null ? NaN : x))));
  if (r.topk_prompt_logprobs) {
    const rows = r.topk_prompt_logprobs;
    const k = Math.max(1, ...rows.map((row) => row?.length ?? 0));
    const ids: number[] = [], lps: number[] = [];
    for (const row of rows) {
      for (let j = 0; j < k; j++) {
        const e = row?.[j];
        ids.push(e ? e[0] : 0);
        lps.push(e ? e[1] : -99999);
      }
    }
    const t = new Writer();
    t.bytes(1, int32Bytes(ids));
    t.bytes(2, float32Bytes(lps));
    t.uint(3, k);
    t.uint(4, rows.length);
    w.message(3, t);
  }
  w.uint(4, r.prompt_cache_hit_tokens ?? 0);
  return w.finish();
}

export function decodeSampleResponse(buf: Uint8Array): SampleResult {
  const out: SampleResult = { type: 'sample', sequences: [] };
  for (const f of readFields(buf)) {
    if (f.field === 1) {
      let stop = 0, tokens: number[] = [], logprobs: number[] | undefined;
      for (const g of readFields(bytesOf(f))) {
        if (g.field === 1) stop = numOf(g);
        else if (g.field === 2) tokens = readInt32s(bytesOf(g));
        else if (g.field === 3) logprobs = readFloat32s(bytesOf(g));
      }
      out.sequences.push({ stop_reason: stop === StopReason.LENGTH ? 'length' : 'stop', tokens, ...(logprobs ? { logprobs } : {}) });
    } else if (f.field === 2) out.prompt_logprobs = readFloat32s(bytesOf(f)).map((x) => (Number.isNaN(x) ? null : x));
    else if (f.field === 3) {
      let ids: number[] = [], lps: number[] = [], k = 0, n = 0;
      for (const g of readFields(bytesOf(f))) {
        if (g.field === 1) ids = readInt32s(bytesOf(g));
        else if (g.field === 2) lps = readFloat32s(bytesOf(g));
        else if (g.field === 3) k = numOf(g);
        else if (g.field === 4) n = numOf(g);
      }
      out.topk_prompt_logprobs = Array.from({ length: n }, (_, i) => {
        if (k === 0 || lps[i * k] === -99999) return null;
        const row: [number, number][] = [];
        for (let j = 0; j < k; j++) if (lps[i * k + j] !== -99999) row.push([ids[i * k + j], lps[i * k + j]]);
        return row;
      });
    } else if (f.field === 4) out.prompt_cache_hit_tokens = numOf(f);
  }
  return out;
}

// ---- ForwardBackwardOutput ----

export function encodeForwardBackwardOutput(r: ForwardBackwardResult): Uint8Array {
  const w = new Writer();
  w.string(1, r.loss_fn_output_type);
  // one ArrayRecord holding every datum: per output name, the datums' values concatenated
  const names = [...new Set(r.loss_fn_outputs.flatMap((o) => Object.keys(o)))];
  const rec = new Writer();
  rec.string(1, 'ArrayRecord');
  for (const name of names) {
    const first = r.loss_fn_outputs.find((o) => o[name])?.[name];
    const isInt = first?.dtype === 'int64';
    const parts = r.loss_fn_outputs.map((o) => (isInt ? int64Bytes : float32Bytes)(o[name]?.data ?? []));
    const offsets = [0];
    for (const p of parts) offsets.push(offsets[offsets.length - 1] + p.length);
    const data = new Uint8Array(offsets[offsets.length - 1]);
    parts.forEach((p, i) => data.set(p, offsets[i]));
    const bt = new Writer();
    bt.bytes(1, data);
    bt.bytes(2, int64Bytes(offsets));
    bt.uint(3, isInt ? DType.INT64 : DType.FLOAT32);
    encodeMapEntry(2, name, (e) => e.message(2, bt), rec);
  }
  rec.uint(3, r.loss_fn_outputs.length);
  w.message(2, rec);
  for (const [k, v] of Object.entries(r.metrics)) encodeMapEntry(3, k, (e) => e.double(2, v), w);
  return w.finish();
}

export function decodeForwardBackwardOutput(buf: Uint8Array): ForwardBackwardResult {
  const out: ForwardBackwardResult = { loss_fn_output_type: '', loss_fn_outputs: [], metrics: {} };
  for (const f of readFields(buf)) {
    if (f.field === 1) out.loss_fn_output_type = strOf(f);
    else if (f.field === 2) out.loss_fn_outputs.push(...decodeArrayRecord(bytesOf(f)));
    else if (f.field === 3) { const e = decodeMapEntry(bytesOf(f)); out.metrics[e.key] = e.value ? doubleOf(e.value) : 0; }
  }
  return out;
}

function decodeArrayRecord(b: Uint8Array): Record<string, WireTensor>[] {
  let numDatums = 0;
  const tensors: [string, Uint8Array][] = [];
  for (const f of readFields(b)) {
    if (f.field === 2) { const e = decodeMapEntry(bytesOf(f)); if (e.value) tensors.push([e.key, bytesOf(e.value)]); }
    else if (f.field === 3) numDatums = numOf(f);
  }
  const out: Record<string, WireTensor>[] = Array.from({ length: numDatums }, () => ({}));
  for (const [name, tb] of tensors) {
    let data: Uint8Array = new Uint8Array(0), offsets: number[] = [], dtype = 0;
    const trailing: Field[] = [];
    for (const f of readFields(tb)) {
      if (f.field === 1) data = bytesOf(f);
      else if (f.field === 2) offsets = readInt64s(bytesOf(f));
      else if (f.field === 3) dtype = numOf(f);
      else if (f.field === 4) trailing.push(f);
    }
    if (offsets.length !== numDatums + 1) throw new ProtoError(`tensor ${name} has ${offsets.length} offsets for ${numDatums} datums`);
    for (let i = 0; i < numDatums; i++) {
      const values = tensorValues(data.subarray(offsets[i], offsets[i + 1]), dtype);
      const tail = int64s(trailing), inner = tail.reduce((a, x) => a * x, 1);
      out[i][name] = { data: values, dtype: dtype === DType.INT64 || dtype === DType.INT32 ? 'int64' : 'float32', shape: [values.length / inner, ...tail] };
    }
  }
  return out;
}
