// Replay of the base model's own chat answers, so that training on agent tasks keeps the rest of what
// the model does. Each anchor is a plain chat request answered by the base weights (T = 1); it is
// recorded as a turn with those exact ids and log-probs (the base weights sampled it) and queued with
// a fixed positive advantage on every token. The PPO ratio is taken against the base's log-probs, so
// the push stops once the policy gives those tokens a little more than the base did (the clip); where
// the policy has drifted below the base it pulls them back up — the likelihood of base answers,
// bounded. The requests are the chat recipe's training requests; the story requests that drift and
// fluency are measured on (drift.ts) are not among them.
import type { Engine } from '../engine/types.ts';
import { collect } from '../engine/types.ts';
import type { Store } from '../store/store.ts';
import { PLAIN_REQUESTS } from '../recipes/chat-model/phrasings.ts';
import type { TurnSample } from './samples.ts';

export const ANCHOR_REQUESTS: readonly string[] = PLAIN_REQUESTS.train;

export interface AnchorOptions {
  /** anchors per finished group with reward variance (a group that trains) */
  perGroup: number;
  /** the advantage on each of an anchor's tokens */
  advantage: number;
  maxTokens: number;
}

/** Sample the base's answer to request `i` and record it; the sample to queue (null when the answer is empty). */
export async function anchorSample(engine: Engine, store: Store, i: number, o: AnchorOptions & { sessionId: string; seed: number; version: number }): Promise<TurnSample | null> {
  const messages = [{ role: 'user' as const, content: ANCHOR_REQUESTS[i % ANCHOR_REQUESTS.length] }];
  const promptIds = engine.tokenizer.encodeChat(messages);
  const params = { maxTokens: Math.min(o.maxTokens, engine.info.contextLength - promptIds.length - 1), temperature: 1, topP: 1, topK: 0, seed: o.seed, weights: 'base' as const };
  const turnId = store.beginTurn({ sessionId: o.sessionId, idSource: 'agent-anchor', turnType: 'main', typeSource: 'agent-anchor', request: { messages, params }, promptIds, policyVersion: -1 });
  const s = await collect(engine.sample(promptIds, params));
  const text = engine.tokenizer.decode(s.ids, true);
  store.finishTurn(turnId, {
    status: 'complete', responseIds: s.ids, responseLogprobs: s.logprobs, responseText: text,
    answer: { content: text, reasoning: null, toolCalls: [] }, finishReason: s.finishReason, policyVersion: s.policyVersion,
  });
  store.endSession(o.sessionId, 'done');
  if (s.ids.length === 0) return null;
  // queued as of the current version: its behaviour log-probs are the base's, whatever version is training
  return { turnId, responseLength: s.ids.length, reward: null, advantage: o.advantage, version: o.version, temperature: 1, reason: null };
}
