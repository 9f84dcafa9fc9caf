// One agent episode against the policy: lease an environment, reset it with the task, then turn by
// turn sample from the engine (stopping at </tool_call>), run the tool call through the pool and
// append the observation's ids, until the policy answers without a tool call, the tool budget or the
// context is spent; then evaluate and close. Every policy turn is recorded in the store with its
// exact prompt ids, sampled ids and their log-probs; the observation tokens sit in the next turn's
// prompt, so they are never trained on. A lost lease (crashed, hung or vanished environment) or an
// engine failure marks the episode failed: its turns stay recorded, but it never becomes a sample.
import type { Engine, SampleParams } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import { PoolFullError, type EnvPool, type Task, type Evaluation } from '../env/types.ts';
import { parseToolCall, observationIds, headMessages, TOOL_CALL_CLOSE } from './protocol.ts';

export interface EpisodeOptions {
  maxTokensPerTurn: number;
  temperature: number;
  topP: number;
  /** a session id for the store (the episode's turns share it) */
  sessionId: string;
  /** how the turns' sessions are tagged in the store ('agent' for training, 'agent-eval' …) */
  source: string;
  seed?: number;
  /** give up allocating after this long when every pool is full */
  allocateTimeoutMs: number;
  signal?: AbortSignal;
}

export interface EpisodeTurn {
  turnId: number;
  promptIds: number[];
  responseIds: number[];
  logprobs: number[];
  policyVersion: number;
  text: string;
  /** the tool call this turn made, and what came back */
  call: { name: string; arguments: Record<string, unknown> } | null;
  observation: string | null;
}

export interface EpisodeResult {
  task: Task;
  status: 'done' | 'failed';
  error?: string;
  evaluation: Evaluation | null;
  turns: EpisodeTurn[];
  toolCalls: number;
  /** why the episode stopped: 'answer' | 'tool budget' | 'context' | 'environment' | error */
  ended: string;
  sampledTokens: number;
  envSteps: number;
  durationMs: number;
}

async function allocate(pool: EnvPool, key: string, timeoutMs: number, signal?: AbortSignal): Promise<string> {
  const end = Date.now() + timeoutMs;
  for (let wait = 50; ; wait = Math.min(wait * 2, 1000)) {
    try { return await pool.allocate(key); } catch (e) {
      if (!(e instanceof PoolFullError) || Date.now() > end || signal?.aborted) throw e;
      await new Promise((r) => setTimeout(r, wait * (0.5 + Math.random())));
    }
  }
}

export async function runEpisode(engine: Engine, store: Store | null, pool: EnvPool, task: Task, o: EpisodeOptions): Promise<EpisodeResult> {
  const t0 = performance.now();
  const tok = engine.tokenizer;
  const turns: EpisodeTurn[] = [];
  let toolCalls = 0, sampledTokens = 0, envSteps = 0;
  let lease: string | null = null;
  let beat: NodeJS.Timeout | undefined;
  let heartbeatError: Error | null = null;
  const result = (status: EpisodeResult['status'], ended: string, evaluation: Evaluation | null, error?: string): EpisodeResult =>
    ({ task, status, error, evaluation, turns, toolCalls, ended, sampledTokens, envSteps, durationMs: performance.now() - t0 });
  try {
    lease = await allocate(pool, task.key, o.allocateTimeoutMs, o.signal);
    const held = lease;
    beat = setInterval(() => { pool.heartbeat(held).catch((e: Error) => { heartbeatError = e; }); }, pool.heartbeatMs);
    beat.unref();
    const reset = await pool.reset(lease, task);
    envSteps++;
    const head = headMessages(reset.system, reset.user);
    let promptIds = tok.encodeChat(head, { tools: reset.tools });
    let ended = 'answer';
    let finalText = '';
    for (;;) {
      if (o.signal?.aborted) throw new Error('aborted');
      const room = engine.info.contextLength - promptIds.length - 1;
      if (room < 8) { ended = 'context'; break; }
      const params: SampleParams = {
        maxTokens: Math.min(o.maxTokensPerTurn, room), temperature: o.temperature, topP: o.topP, topK: 0, stop: [TOOL_CALL_CLOSE],
        seed: o.seed === undefined ? undefined : o.seed + turns.length,
      };
      const turnId = store ? store.beginTurn({ sessionId: o.sessionId, idSource: o.source, turnType: 'main', typeSource: o.source, request: { task: task.key, turn: turns.length, messages: head, tools: reset.tools, params }, promptIds, policyVersion: -1 }) : -1;
      const s = await collect(engine.sample(promptIds, params, o.signal));
      sampledTokens += s.ids.length;
      // the text as the model wrote it, stop string included (decoding, not re-tokenizing)
      const text = tok.decode(s.ids, true);
      const parsed = s.finishReason === 'length' && !text.includes(TOOL_CALL_CLOSE) ? null : parseToolCall(text);
      const call = parsed?.ok ? { name: parsed.name, arguments: parsed.arguments } : null;
      if (store) {
        store.finishTurn(turnId, {
          status: s.finishReason === 'abort' ? 'aborted' : 'complete', responseIds: s.ids, responseLogprobs: s.logprobs, responseText: text,
          answer: { content: text, reasoning: null, toolCalls: call ? [{ name: call.name, arguments: JSON.stringify(call.arguments) }] : [] },
          finishReason: s.finishReason, policyVersion: s.policyVersion,
        });
      }
      const turn: EpisodeTurn = { turnId, promptIds, responseIds: s.ids, logprobs: s.logprobs, policyVersion: s.policyVersion, text, call, observation: null };
      turns.push(turn);
      if (s.finishReason === 'abort') throw new Error('sampling was aborted');
      if (!parsed) { finalText = text; ended = s.finishReason === 'length' ? 'length' : 'answer'; break; }
      toolCalls++;
      const obs = parsed.ok ? await pool.execTool(lease, { name: parsed.name, arguments: parsed.arguments })
        : { content: `Error: ${parsed.error}`, error: true, done: toolCalls >= reset.maxToolCalls };
      if (parsed.ok) envSteps++;
      turn.observation = obs.content;
      if (heartbeatError) throw heartbeatError;
      if (obs.done || toolCalls >= reset.maxToolCalls) { ended = 'tool budget'; finalText = text; break; }
      const stoppedAtEos = typeof s.stoppedBy === 'number';
      promptIds = [...promptIds, ...s.ids, ...observationIds(tok, head, reset.tools, obs.content, stoppedAtEos)];
    }
    const evaluation = await pool.evaluate(lease, { finalMessage: finalText, toolCalls });
    envSteps++;
    await pool.close(lease).catch(() => {});
    lease = null;
    return result('done', ended, evaluation);
  } catch (e) {
    if (lease) await pool.close(lease).catch(() => {});
    return result('failed', (e as Error).name, null, (e as Error).message);
  } finally {
    clearInterval(beat);
    store?.endSession(o.sessionId, 'done');
  }
}
