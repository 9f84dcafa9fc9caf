// serve-tinker's request parsing and answering: body reading with a size limit, JSON objects,
// integer fields, sampling parameters, forward_backward bodies (JSON or protobuf), the loss of a
// datum for forward-only calls, and JSON answers. Bad input raises HttpError (a 4xx for the client).
import type { IncomingMessage, ServerResponse } from 'node:http';
import { DEFAULT_SAMPLE_PARAMS, type SampleParams, type Datum } from '../types.ts';
import { decodeForwardBackwardRequest } from './proto.ts';
import type { ForwardBackwardInput, WireSamplingParams, lossFromWire } from './wire.ts';
import { ppoToken, crossEntropyToken } from '../../learn/losses.ts';

export class HttpError extends Error {
  readonly status: number;
  constructor(status: number, message: string) { super(message); this.status = status; }
}

/** Tinker's sum-of-tokens loss of one datum from the learner's log-probs (forward without gradients). */
export function datumLoss(d: Datum, logprobs: number[], spec: ReturnType<typeof lossFromWire>['spec']): number {
  let sum = 0;
  for (let t = 0; t < logprobs.length; t++) {
    const mask = d.lossMask?.[t] ?? 1;
    if (mask === 0) continue;
    if (spec.kind === 'ppo') sum += ppoToken(logprobs[t], d.behaviourLogprobs![t], d.advantages![t], spec.clipLow ?? 0.2, spec.clipHigh ?? 0.28).loss;
    else sum += mask * crossEntropyToken(logprobs[t]).loss;
  }
  return sum;
}

export function samplingParams(p: WireSamplingParams, weights: number | 'base', room: number): SampleParams {
  const num = (v: unknown, name: string, ok: (x: number) => boolean): number | undefined => {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !ok(v)) throw new HttpError(400, `sampling_params.${name} is invalid (got ${JSON.stringify(v)})`);
    return v;
  };
  const maxTokens = num(p.max_tokens, 'max_tokens', (x) => Number.isInteger(x) && x >= 1) ?? Math.min(DEFAULT_SAMPLE_PARAMS.maxTokens, room);
  const topK = num(p.top_k, 'top_k', (x) => Number.isInteger(x) && x >= -1) ?? -1;
  const out: SampleParams = {
    maxTokens: Math.min(maxTokens, room),
    temperature: num(p.temperature, 'temperature', (x) => x >= 0) ?? 1,
    topP: num(p.top_p, 'top_p', (x) => x > 0 && x <= 1) ?? 1,
    topK: topK < 0 ? 0 : topK,
    weights,
  };
  const seed = num(p.seed, 'seed', (x) => Number.isInteger(x) && x >= 0);
  if (seed !== undefined) out.seed = seed;
  const stop = typeof p.stop === 'string' ? [p.stop] : p.stop;
  if (Array.isArray(stop) && stop.length > 0) {
    if (stop.every((s) => typeof s === 'string')) out.stop = stop as string[];
    else if (stop.every((s) => Number.isInteger(s))) out.stopTokenIds = stop as number[];
    else throw new HttpError(400, 'sampling_params.stop must be strings or token ids, not a mix');
  }
  return out;
}

export function jsonFwdBwd(b: Record<string, unknown>, key: string, forwardOnly: boolean) {
  const input = b[key] as ForwardBackwardInput | undefined;
  if (!input || typeof input !== 'object') throw new HttpError(400, `${key} is required`);
  return { model_id: b.model_id, seq_id: optionalInt(b, 'seq_id'), forward_only: forwardOnly, input };
}

export function decodeProtoFwdBwd(raw: Buffer) {
  try {
    const r = decodeForwardBackwardRequest(new Uint8Array(raw.buffer, raw.byteOffset, raw.length));
    return { model_id: r.model_id, seq_id: r.seq_id, forward_only: r.forward_only, input: r.input };
  } catch (e) {
    throw new HttpError(400, `the protobuf body could not be decoded: ${(e as Error).message}`);
  }
}

export function intField(b: Record<string, unknown>, key: string, d: number): number {
  const v = b[key] ?? d;
  if (!Number.isInteger(v)) throw new HttpError(400, `${key} must be an integer (got ${JSON.stringify(b[key])})`);
  return v as number;
}

export function optionalInt(b: Record<string, unknown>, key: string): number | undefined {
  return b[key] === undefined || b[key] === null || b[key] === 0 ? undefined : intField(b, key, 0);
}

export function parseJson(raw: Buffer): unknown {
  if (raw.length === 0) return {};
  let v: unknown;
  try { v = JSON.parse(raw.toString('utf8')); } catch (e) { throw new HttpError(400, `the body is not valid JSON: ${(e as Error).message}`); }
  if (!v || typeof v !== 'object' || Array.isArray(v)) throw new HttpError(400, 'the body must be a JSON object');
  return v;
}

export function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolveBody, reject) => {
    const parts: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) { reject(new HttpError(413, `the request body exceeds ${limit} bytes`)); req.destroy(); return; }
      parts.push(c);
    });
    req.on('end', () => resolveBody(Buffer.concat(parts)));
    req.on('error', reject);
  });
}

export function send(res: ServerResponse, status: number, body: unknown): void {
  const s = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(s) });
  res.end(s);
}

