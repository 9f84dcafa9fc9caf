// The engine thread: owns the model and runs the batch scheduler, so the caller's event loop
// (the HTTP server) never waits on compute. Messages in: sample, abort, score, close.
// Messages out: ready | tokens (one per step, for every sequence that advanced) | done | scored | error.
import { parentPort, workerData } from 'node:worker_threads';
import { EmbeddedRuntime } from './runtime.ts';
import type { LoadOptions } from './model.ts';
import type { SampleParams, ScoreRequest, ScoreOptions } from '../types.ts';

export type WorkerRequest =
  | { op: 'sample'; id: number; promptIds: number[]; params: SampleParams }
  | { op: 'abort'; id: number }
  | { op: 'score'; id: number; requests: ScoreRequest[]; opts: ScoreOptions }
  | { op: 'close' };

const port = parentPort!;
const { dir, opts } = workerData as { dir: string; opts: LoadOptions & { modelId?: string } };

let rt: EmbeddedRuntime;
try {
  rt = new EmbeddedRuntime(dir, opts);
  port.postMessage({ op: 'ready', info: rt.info });
} catch (e) {
  port.postMessage({ op: 'fatal', name: (e as Error).name, message: (e as Error).message });
  process.exit(0);
}

const requestOf = new Map<number, number>(); // runtime key → request id
const keyOf = new Map<number, number>();
const scores: Extract<WorkerRequest, { op: 'score' }>[] = [];
let scheduled = false;
let steps = 0;

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(run);
}

function errorPayload(e: unknown) {
  const err = e as Error & { code?: string };
  return { name: err.name, message: err.message, code: err.code ?? 'internal' };
}

function run(): void {
  scheduled = false;
  // sampling comes first; a queued scoring job runs when nothing samples, or every 8th step
  const doScore = scores.length > 0 && (!rt.busy || ++steps % 8 === 0);
  if (doScore) {
    const job = scores.shift()!;
    try {
      const out = rt.score(job.requests, job.opts);
      port.postMessage({ op: 'scored', id: job.id, logprobs: out });
    } catch (e) {
      port.postMessage({ op: 'error', id: job.id, error: errorPayload(e) });
    }
  } else if (rt.busy) {
    try {
      const outputs = rt.step();
      const tokens = [];
      for (const o of outputs) {
        const id = requestOf.get(o.key)!;
        if (o.token) tokens.push({ id, token: o.token });
        if (o.result) {
          tokens.push({ id, result: o.result });
          requestOf.delete(o.key); keyOf.delete(id);
        }
      }
      if (tokens.length > 0) port.postMessage({ op: 'step', events: tokens });
    } catch (e) {
      // a failed step fails the sequences in it, never the thread
      for (const [key, id] of requestOf) { rt.abort(key); port.postMessage({ op: 'error', id, error: errorPayload(e) }); }
      requestOf.clear(); keyOf.clear();
      try { rt.step(); } catch { /* nothing left to retire */ }
    }
  }
  if (rt.busy || scores.length > 0) schedule();
}

port.on('message', async (msg: WorkerRequest) => {
  switch (msg.op) {
    case 'sample':
      try {
        const key = rt.add(msg.promptIds, msg.params);
        requestOf.set(key, msg.id); keyOf.set(msg.id, key);
        schedule();
      } catch (e) {
        port.postMessage({ op: 'error', id: msg.id, error: errorPayload(e) });
      }
      break;
    case 'abort': {
      const key = keyOf.get(msg.id);
      if (key !== undefined) { rt.abort(key); schedule(); }
      break;
    }
    case 'score':
      scores.push(msg);
      schedule();
      break;
    case 'close':
      await rt.close();
      port.postMessage({ op: 'closed' });
      port.close();
      break;
  }
});
