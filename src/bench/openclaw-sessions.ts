// `bench openclaw --memory-sessions N`: memory under many sessions with different system prompts.
// Each session sends two turns (the second reuses the first through the prefix cache) with a system
// prompt of its own (the captured OpenClaw system prompt, cut to a size and opened with the
// session's number, so no two sessions share a prefix). After every turn the prefix cache's bytes,
// the KV pages made so far and the process's RSS are read; their peaks are the result, beside the
// configured budgets.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import { ChatTokenizer } from '../engine/embedded/tokenizer.ts';
import type { ChatMessage, SampleParams } from '../engine/types.ts';
import type { OpenclawBenchOptions } from './openclaw.ts';
import { shapeModelDir } from './shapes.ts';

export interface SessionsMemoryResult {
  shape: string; sessions: number; promptTokens: number; kvDtype: string;
  prefixCacheBudgetBytes: number; kvBudgetBytes: number;
  peakPrefixCacheBytes: number; peakKvReservedBytes: number; peakRssBytes: number; rssBeforeBytes: number;
  entries: number; evictions: number; hits: number;
}

export async function benchOpenclawSessions(o: OpenclawBenchOptions & { sessions: number; sessionSystemChars: number }, tokenizerDir: string): Promise<SessionsMemoryResult> {
  const main = (JSON.parse(readFileSync(join(o.requestsDir, '05-gateway-conv-a-turn1-plugin-and-affinity-headers.json'), 'utf8')) as { body: { messages: ChatMessage[] } }).body;
  const dir = shapeModelDir(o.shape, tokenizerDir, o.cacheDir);
  const tok = ChatTokenizer.load(dir);
  const engine = await EmbeddedEngine.load(dir, {
    threads: o.threads, prefixCacheMiB: o.prefixCacheMiB, kernel: o.kernel, weightsDtype: o.weightsDtype, kvDtype: o.kvDtype, kvMemoryMiB: o.kvMemoryMiB,
  });
  try {
    const V = engine.info.vocabSize;
    const encode = (m: ChatMessage[]) => tok.encodeChat(m, { addGenerationPrompt: true }).map((id) => id % V);
    const params = (seed: number): SampleParams => ({ maxTokens: 8, temperature: 0.7, topP: 1, topK: 0, seed, ignoreEos: true });
    const rssBefore = process.memoryUsage.rss();
    let peakCache = 0, peakReserved = 0, peakRss = rssBefore, promptTokens = 0;
    const read = async () => {
      const st = await engine.stats();
      peakCache = Math.max(peakCache, st.prefixCache.bytes);
      peakReserved = Math.max(peakReserved, st.kvReservedBytes);
      peakRss = Math.max(peakRss, process.memoryUsage.rss());
      return st;
    };
    for (let s = 0; s < o.sessions; s++) {
      const system = `Session ${s} of ${o.sessions}.\n${String(main.messages[0].content).slice(0, o.sessionSystemChars)}`;
      const history: ChatMessage[] = [{ role: 'system', content: system }, { role: 'user', content: `Hello, I am user ${s}.` }];
      const first = encode(history);
      promptTokens = first.length;
      const a = await Array.fromAsync(engine.sample(first, params(s)));
      await read();
      const answer = a.filter((e) => e.type === 'token').map((e) => (e.type === 'token' ? e.token.id : 0));
      history.push({ role: 'assistant', content: tok.decode(answer) }, { role: 'user', content: 'And what can you do?' });
      await Array.fromAsync(engine.sample(encode(history), params(1000 + s)));
      const st = await read();
      if ((s + 1) % 10 === 0) o.log(`  ${s + 1} sessions: prefix cache ${(st.prefixCache.bytes / 2 ** 20).toFixed(0)} of ${(st.prefixCache.budgetBytes / 2 ** 20).toFixed(0)} MiB (${st.prefixCache.entries} entries, ${st.prefixCache.evictions} evictions), KV pages made ${(st.kvReservedBytes / 2 ** 20).toFixed(0)} MiB, RSS ${(process.memoryUsage.rss() / 2 ** 20).toFixed(0)} MiB`);
    }
    const st = await read();
    return {
      shape: o.shape, sessions: o.sessions, promptTokens, kvDtype: st.kvDtype,
      prefixCacheBudgetBytes: st.prefixCache.budgetBytes, kvBudgetBytes: st.kvBudgetBytes,
      peakPrefixCacheBytes: peakCache, peakKvReservedBytes: peakReserved, peakRssBytes: peakRss, rssBeforeBytes: rssBefore,
      entries: st.prefixCache.entries, evictions: st.prefixCache.evictions, hits: st.prefixCache.hits,
    };
  } finally {
    await engine.close();
  }
}

export function sessionsMemoryTable(r: SessionsMemoryResult): string {
  const m = (b: number) => `${(b / 2 ** 20).toFixed(0)} MiB`;
  return [
    `${r.shape}, KV ${r.kvDtype}: ${r.sessions} sessions × 2 turns, each its own ~${r.promptTokens}-token system prompt`,
    `prefix cache: peak ${m(r.peakPrefixCacheBytes)} of a ${m(r.prefixCacheBudgetBytes)} budget (${r.entries} entries at the end, ${r.evictions} evictions, ${r.hits} hits)`,
    `KV pages made: peak ${m(r.peakKvReservedBytes)} of a ${m(r.kvBudgetBytes)} KV budget; RSS ${m(r.rssBeforeBytes)} before the sessions, peak ${m(r.peakRssBytes)}`,
  ].join('\n');
}
