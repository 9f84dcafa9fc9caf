// The engine thread: owns the model and runs the batch scheduler, so the caller's event loop
// (the HTTP server) never waits on compute. Sampling runs step by step; every other request
// (scoring, training, versions, files) is a job. Training jobs advance one packed micro-batch per
// turn, alternating with sampling steps, so a long forward/backward never stalls the streams.
// Scoring jobs (judge and OPD-teacher passes, PPO re-scoring: background work) wait while
// user-facing requests are in the engine, so they delay neither a turn's first token nor its
// decode; a scoring job held back for SCORING_MAX_WAIT_MS runs one (paced) pass, so it still
// progresses under constant traffic.
// Messages in: sample, abort, job, close. Out: ready | step | result | error | closed.
import { parentPort, workerData } from 'node:worker_threads';
import { EmbeddedRuntime, type RuntimeOptions } from './runtime.ts';
import type { LoraConfig } from './lora.ts';
import { EngineError, type SampleParams } from '../types.ts';
import { scoringMayRun } from './job-priority.ts';

export type JobName = 'score' | 'scoreTopK' | 'configureTraining' | 'forwardBackward' | 'optimStep' | 'saveWeights' | 'publish'
  | 'saveAdapter' | 'saveModel' | 'loadAdapter' | 'saveTrainingState' | 'loadTrainingState' | 'versions' | 'stats';

export type WorkerRequest =
  | { op: 'sample'; id: number; promptIds: number[]; params: SampleParams }
  | { op: 'abort'; id: number }
  | { op: 'job'; id: number; name: JobName; args: unknown[] }
  | { op: 'close' };

const port = parentPort!;
const { dir, opts } = workerData as { dir: string; opts: RuntimeOptions };

let rt: EmbeddedRuntime;
try {
  rt = new EmbeddedRuntime(dir, opts);
  port.postMessage({ op: 'ready', info: rt.info });
} catch (e) {
  port.postMessage({ op: 'fatal', name: (e as Error).name, message: (e as Error).message });
  process.exit(0);
}

/** A job's work, one unit per `next()`. */
type Work = Generator<void, unknown>;
// eslint-disable-next-line require-yield
function* once(f: () => unknown): Work { return f(); }

function startJob(name: JobName, args: unknown[]): Work {
  const a = args as never[];
  switch (name) {
    case 'score': return rt.scoreSteps(a[0], a[1]); // a pass per unit: decode steps run in between
    case 'scoreTopK': return rt.scoreTopKSteps(a[0], a[1], a[2]);
    case 'configureTraining': return once(() => rt.configureTraining(a[0] as Partial<LoraConfig> | null));
    case 'forwardBackward': return rt.forwardBackwardSteps(a[0], a[1]);
    case 'optimStep': return once(() => rt.optimStep(a[0]));
    case 'saveWeights': return once(() => rt.saveWeights(a[0]));
    case 'publish': return once(() => rt.publish(a[0]));
    case 'saveAdapter': return once(() => rt.saveAdapter(a[0], a[1]));
    case 'saveModel': return once(() => rt.saveModel(a[0], a[1]));
    case 'loadAdapter': return once(() => rt.loadAdapter(a[0]));
    case 'saveTrainingState': return once(() => rt.saveTrainingState(a[0]));
    case 'loadTrainingState': return once(() => rt.loadTrainingState(a[0]));
    case 'versions': return once(() => ({ published: rt.published, live: rt.liveVersions, optimizerStep: rt.optimizerStep }));
    case 'stats': return once(() => rt.stats());
  }
}

const requestOf = new Map<number, number>(); // runtime key → request id
const keyOf = new Map<number, number>();
const jobs: { id: number; name: JobName; args: unknown[]; work: Work | null }[] = [];
let scheduled = false;

function schedule(): void {
  if (scheduled) return;
  scheduled = true;
  setImmediate(run);
}

function errorPayload(e: unknown) {
  const err = e as Error & { code?: string };
  const code = e instanceof EngineError ? err.code : err instanceof RangeError ? 'bad_request' : err.name === 'ModelFileError' ? 'bad_request' : 'internal';
  return { name: err.name, message: err.message, code };
}

function sampleStep(): void {
  try {
    const outputs = rt.step();
    const events = [];
    for (const o of outputs) {
      const id = requestOf.get(o.key)!;
      if (o.token) events.push({ id, token: o.token });
      if (o.result) {
        events.push({ id, result: o.result });
        requestOf.delete(o.key); keyOf.delete(id);
      }
    }
    if (events.length > 0) port.postMessage({ op: 'step', events });
  } catch (e) {
    // a failed step fails the sequences in it, never the thread
    for (const [key, id] of requestOf) { rt.abort(key); port.postMessage({ op: 'error', id, error: errorPayload(e) }); }
    requestOf.clear(); keyOf.clear();
    try { rt.step(); } catch { /* nothing left to retire */ }
  }
}

function jobUnit(): void {
  const job = jobs[0];
  try {
    job.work ??= startJob(job.name, job.args);
    const r = job.work.next();
    if (!r.done) return;
    jobs.shift();
    port.postMessage({ op: 'result', id: job.id, value: r.value });
  } catch (e) {
    jobs.shift();
    port.postMessage({ op: 'error', id: job.id, error: errorPayload(e) });
  }
}

let scoringWaitingSince: number | null = null;

function run(): void {
  scheduled = false;
  // sampling and jobs take turns: one decode step, then one job unit (background scoring waits for users)
  if (rt.busy) sampleStep();
  if (jobs.length > 0) {
    const may = scoringMayRun(jobs[0].name, rt.servingUsers, scoringWaitingSince, performance.now());
    scoringWaitingSince = may.waitingSince;
    if (may.run) jobUnit();
  }
  if (rt.busy || jobs.length > 0) schedule();
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
    case 'job':
      // figures are answered at once, not behind a long job
      if (msg.name === 'stats') { port.postMessage({ op: 'result', id: msg.id, value: rt.stats() }); break; }
      jobs.push({ id: msg.id, name: msg.name, args: msg.args, work: null });
      schedule();
      break;
    case 'close':
      await rt.close();
      port.postMessage({ op: 'closed' });
      port.close();
      break;
  }
});
