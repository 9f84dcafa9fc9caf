// `openclaw-rl bench openclaw`: what an OpenClaw user waits for, on a random-weight model of a real
// shape. Requests are built from the captured OpenClaw requests (openclaw-requests/ beside this file:
// the system prompt, its tools and the internal-context block, padded to a ~10K-token system prompt
// as OpenClaw sends with a full workspace) and rendered with the real Qwen3 chat template and
// tokenizer. A session has five turns, each prompt the previous one plus the answer and the next
// user message; a heartbeat side turn (its own system prompt) runs between turns, and after every
// turn the judge (a short low-priority sample) and the OPD teacher and PPO re-scoring passes run in
// the background, as `serve` does. A second session then opens with the same system prompt.
// The same run is made with the prefix cache on and off; with it on, a decode's speed is also
// measured alone and while another request prefills a cold prompt of the same size.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedEngine } from '../engine/embedded/engine.ts';
import type { RuntimeStats, KvDtype } from '../engine/embedded/runtime.ts';
import type { KernelName } from '../engine/embedded/kernels/kernel.ts';
import type { WeightsDtype } from '../engine/embedded/kernels/packed.ts';
import { ChatTokenizer } from '../engine/embedded/tokenizer.ts';
import type { ChatMessage, ToolSpec, SampleParams } from '../engine/types.ts';
import { shapeModelDir } from './shapes.ts';
import { median, peakRssBytes } from './stats.ts';

export interface OpenclawBenchOptions {
  shape: string;
  /** target size of the rendered system prompt + tools, in tokens */
  systemTokens: number;
  turns: number;
  /** turns of the cache-off baseline (every one re-reads the whole prompt, so fewer are enough) */
  baselineTurns: number;
  /** answer tokens per turn */
  answerTokens: number;
  prefixCacheMiB?: number;
  threads?: number;
  /** folder of the captured requests */
  requestsDir: string;
  /** which runs to make (both by default: the comparison is the point) */
  modes?: ('cache' | 'no-cache')[];
  /** how long to measure a decode while a cold prompt prefills */
  interferenceMs: number;
  /** measure only the decode during a cold prefill (no sessions) */
  interferenceOnly?: boolean;
  /** the engine's decode share (RuntimeOptions.decodeShare) */
  decodeShare?: number;
  kernel?: KernelName;
  weightsDtype?: WeightsDtype;
  kvDtype?: KvDtype | 'auto';
  kvMemoryMiB?: number;
  /** where random models are written once and reused */
  cacheDir?: string;
  log: (line: string) => void;
}

export interface TurnTiming {
  name: string; promptTokens: number; ttftMs: number; decodeTokensPerSec: number;
  /** prompt tokens past the longest prefix shared with the previous turn's prompt and answer (what a cache hit leaves to prefill) */
  newTokens?: number;
}

/** Length of the common start of two token-id lists. */
export function sharedPrefix(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export interface ModeResult {
  mode: 'cache' | 'no-cache';
  turns: TurnTiming[];
  heartbeats: TurnTiming[];
  secondSession: TurnTiming | null;
  backgroundJobs: number;
  stats: RuntimeStats;
  interference: { idleTokensPerSec: number; duringPrefillTokensPerSec: number; ratio: number; prefillTokens: number; prefillMs: number } | null;
}

export interface OpenclawBenchResult {
  shape: string; contextLength: number; requestedSystemTokens: number; systemTokens: number; modes: ModeResult[]; peakRssBytes: number;
  /** how the engine ran: kernel × threads, weights dtype and bytes, KV caches */
  engine: { kernel: string; threads: number; weightBytes: number; kvDtype: string };
}

interface Captured { body: { messages: ChatMessage[]; tools?: ToolSpec[] } }

/** The conversation pieces, from the captured requests. */
function loadCaptures(dir: string) {
  const read = (f: string) => JSON.parse(readFileSync(join(dir, f), 'utf8')) as Captured;
  const main = read('05-gateway-conv-a-turn1-plugin-and-affinity-headers.json').body;
  const heartbeat = read('10-heartbeat-side-turn.json').body;
  return {
    system: String(main.messages[0].content), tools: main.tools ?? [],
    firstUser: String(main.messages[1].content), internal: main.messages[main.messages.length - 1],
    heartbeatSystem: String(heartbeat.messages[0].content), heartbeatMessages: heartbeat.messages.slice(1),
    // the heartbeat request carries the tools minus the gateway one
    heartbeatTools: (main.tools ?? []).filter((t) => t.function.name !== 'openclaw'),
  };
}

const USER_TURNS = ['What is my name?', 'List the files in my workspace, please.', 'Summarise the README in two sentences.', 'Thanks, bye.'];

/** Pad a system prompt with workspace-context sections (as OpenClaw appends) until the rendered prompt has ~`target` tokens. */
function padSystem(tok: ChatTokenizer, system: string, tools: ToolSpec[], target: number, seed: string): string {
  const section = (i: number) => `\n## Workspace file ${seed}${i}: notes/context-${i}.md\n${system.slice(0, 1800)}\n`;
  const size = (s: string) => tok.encodeChat([{ role: 'system', content: s }], { tools }).length;
  const base = size(system);
  if (base >= target) return system;
  const perSection = size(system + section(0)) - base;
  let padded = system;
  for (let i = 0; i < Math.floor((target - base) / perSection); i++) padded += section(i);
  return padded;
}

function foldIds(ids: number[], V: number): number[] { return ids.map((id) => id % V); }

async function timedSample(engine: EmbeddedEngine, name: string, ids: number[], params: SampleParams): Promise<{ timing: TurnTiming; ids: number[] }> {
  const t0 = performance.now();
  let first = 0;
  const out: number[] = [];
  for await (const ev of engine.sample(ids, params)) {
    if (ev.type === 'token') { if (out.length === 0) first = performance.now(); out.push(ev.token.id); }
  }
  const end = performance.now();
  return { timing: { name, promptTokens: ids.length, ttftMs: first - t0, decodeTokensPerSec: out.length > 1 ? (out.length - 1) / ((end - first) / 1000) : 0 }, ids: out };
}

export async function benchOpenclaw(o: OpenclawBenchOptions, tokenizerDir: string): Promise<OpenclawBenchResult> {
  const cap = loadCaptures(o.requestsDir);
  const dir = shapeModelDir(o.shape, tokenizerDir, o.cacheDir);
  const tok = ChatTokenizer.load(dir);
  let system = '', heartbeatSystem = '', target = 0;
  const modes: ModeResult[] = [];
  let contextLength = 0, systemTokens = 0;
  let engineInfo: OpenclawBenchResult['engine'] = { kernel: '', threads: 0, weightBytes: 0, kvDtype: '' };
  for (const mode of o.modes ?? ['cache', 'no-cache'] as const) {
    o.log(`${o.shape}: loading (prefix cache ${mode === 'cache' ? 'on' : 'off'})…`);
    const engine = await EmbeddedEngine.load(dir, {
      threads: o.threads, prefixCacheMiB: mode === 'cache' ? o.prefixCacheMiB : 0, decodeShare: o.decodeShare,
      kernel: o.kernel, weightsDtype: o.weightsDtype, kvDtype: o.kvDtype, kvMemoryMiB: o.kvMemoryMiB,
    });
    try {
      const V = engine.info.vocabSize;
      contextLength = engine.info.contextLength;
      engineInfo = { kernel: engine.info.kernel, threads: engine.info.threads, weightBytes: engine.info.weightBytes, kvDtype: (await engine.stats()).kvDtype };
      o.log(`  ${engineInfo.kernel} × ${engineInfo.threads}, weights ${(engineInfo.weightBytes / 2 ** 30).toFixed(2)} GiB, KV ${engineInfo.kvDtype}, context ${contextLength}`);
      if (!system) {
        // leave room for the turns: a prompt that does not fit in memory is refused up front
        const room = contextLength - o.turns * (o.answerTokens + 200) - 400;
        target = Math.min(o.systemTokens, room);
        if (target < o.systemTokens) o.log(`  a ${o.systemTokens}-token system prompt does not fit this engine's ${contextLength}-token context (what fits in memory) with ${o.turns} turns: using ${target} tokens`);
        system = padSystem(tok, cap.system, cap.tools, target, 'A');
        heartbeatSystem = padSystem(tok, cap.heartbeatSystem, cap.heartbeatTools, target, 'A');
      }
      const encode = (messages: ChatMessage[], tools: ToolSpec[]) => foldIds(tok.encodeChat(messages, { tools, addGenerationPrompt: true }), V);
      systemTokens = foldIds(tok.encodeChat([{ role: 'system', content: system }], { tools: cap.tools }), V).length;
      const params = (seed: number, maxTokens = o.answerTokens, priority?: 'low'): SampleParams => ({ maxTokens, temperature: 0.7, topP: 1, topK: 0, seed, ignoreEos: true, priority });
      const background: Promise<unknown>[] = [];
      const turns: TurnTiming[] = [], heartbeats: TurnTiming[] = [];
      const history: ChatMessage[] = [{ role: 'system', content: system }];
      let previous: number[] = [], firstIds: number[] = [];
      const nTurns = o.interferenceOnly ? 0 : mode === 'cache' ? o.turns : o.baselineTurns;
      for (let t = 0; t < nTurns; t++) {
        const user = t === 0 ? cap.firstUser : `[Sun 2026-11-22 01:4${t} UTC] ${USER_TURNS[(t - 1) % USER_TURNS.length]}`;
        history.push({ role: 'user', content: user });
        // the internal-context block rides at the end of every request and is not kept in history
        const ids = encode([...history, cap.internal], cap.tools);
        const r = await timedSample(engine, `turn ${t + 1}`, ids, params(t + 1));
        r.timing.newTokens = ids.length - sharedPrefix(previous, ids);
        if (t === 0) firstIds = ids;
        previous = [...ids, ...r.ids];
        turns.push(r.timing);
        o.log(`  ${mode} turn ${t + 1}: prompt ${ids.length} tokens (${r.timing.newTokens} past the previous turn's), first token ${(r.timing.ttftMs / 1000).toFixed(2)} s, decode ${r.timing.decodeTokensPerSec.toFixed(1)} tok/s`);
        const answer = tok.decode(r.ids);
        history.push({ role: 'assistant', content: answer });
        if (mode === 'cache') {
          // judge (a compact prompt of its own), OPD teacher scoring (the turn's prompt plus a hint,
          // under the base weights) and PPO re-scoring (the turn as sampled), in the background
          const judgeIds = encode([{ role: 'user', content: `Did the assistant's answer satisfy the user? Answer +1, 0 or -1.\nUser: ${user.slice(0, 400)}\nAssistant: ${answer}\nNext user message: ${USER_TURNS[t % USER_TURNS.length]}` }], []);
          background.push(Array.fromAsync(engine.sample(judgeIds, params(100 + t, 8, 'low'))));
          const hinted = encode([...history.slice(0, -1), { role: 'user', content: `${user}\n\n[hint] The user wants a short, direct answer.` }, cap.internal], cap.tools);
          background.push(engine.score([{ promptIds: hinted, responseIds: r.ids }], { adapter: 'base' }));
          background.push(engine.score([{ promptIds: ids, responseIds: r.ids }], { adapter: 'published' }));
        }
        if (t < nTurns - 1 && mode === 'cache') {
          const hb = await timedSample(engine, `heartbeat ${t + 1}`, encode([{ role: 'system', content: heartbeatSystem }, ...cap.heartbeatMessages], cap.heartbeatTools), params(50 + t, 8));
          heartbeats.push(hb.timing);
          o.log(`  ${mode} heartbeat ${t + 1}: prompt ${hb.timing.promptTokens} tokens, first token ${(hb.timing.ttftMs / 1000).toFixed(2)} s`);
        }
      }
      await Promise.all(background);
      // without the cache a second session is a cold prefill like turn 1: measured with the cache only
      let second: TurnTiming | null = null;
      if (mode === 'cache' && !o.interferenceOnly) {
        const secondIds = encode([{ role: 'system', content: system }, { role: 'user', content: cap.firstUser.replace('Alice', 'Bob') }, cap.internal], cap.tools);
        second = (await timedSample(engine, 'second session', secondIds, params(77))).timing;
        second.newTokens = secondIds.length - sharedPrefix(firstIds, secondIds);
        o.log(`  ${mode} second session: prompt ${second.promptTokens} tokens (${second.newTokens} past the first session's), first token ${(second.ttftMs / 1000).toFixed(2)} s (nothing in the background)`);
      }

      let interference: ModeResult['interference'] = null;
      if (mode === 'cache') {
        // a decode alone, then the same decode while a cold prompt of the same size prefills
        const decoder = engine.sample(encode([{ role: 'user', content: 'Tell me a long story.' }], []), params(5, 100000))[Symbol.asyncIterator]();
        const rate = async (n: number) => { await decoder.next(); const t0 = performance.now(); for (let i = 0; i < n; i++) await decoder.next(); return n / ((performance.now() - t0) / 1000); };
        await rate(4);
        const idleBefore = await rate(48);
        const cold = padSystem(tok, 'You are a careful assistant.\n' + cap.system, cap.tools, target, 'B');
        const coldIds = encode([{ role: 'system', content: cold }, { role: 'user', content: 'Hello?' }], cap.tools);
        // measured over the prefill, or its first `interferenceMs` (then the cold request is dropped)
        let prefilled = false;
        const stop = new AbortController();
        const coldRun = Array.fromAsync(engine.sample(coldIds, params(9, 2), stop.signal)).then(() => { prefilled = true; }, () => { prefilled = true; });
        let n = 0;
        const d0 = performance.now();
        while (!prefilled && performance.now() - d0 < o.interferenceMs) { await decoder.next(); n++; }
        const ms = performance.now() - d0;
        const during = n / (ms / 1000);
        const pacer = (await engine.stats()).pacer;
        stop.abort();
        await coldRun;
        // the idle speed before and after the window (the machine's speed may drift meanwhile)
        const idle = (idleBefore + await rate(48)) / 2;
        await decoder.return?.(undefined);
        if (pacer) o.log(`  pacer at the end of the window: decode step ${pacer.decodeMs.toFixed(1)} ms, a prompt row adds ${pacer.rowMs.toFixed(1)} ms`);
        interference = { idleTokensPerSec: idle, duringPrefillTokensPerSec: during, ratio: during / idle, prefillTokens: coldIds.length, prefillMs: ms };
        o.log(`  decode alone ${idle.toFixed(1)} tok/s; over ${(ms / 1000).toFixed(1)} s of a ${coldIds.length}-token prompt's prefill: ${during.toFixed(1)} tok/s (${(100 * during / idle).toFixed(0)}%)`);
      }
      const stats = await engine.stats();
      o.log(`  ${mode} prefix cache: ${(stats.prefixCache.bytes / 2 ** 20).toFixed(0)} of ${(stats.prefixCache.budgetBytes / 2 ** 20).toFixed(0)} MiB, ${stats.prefixCache.entries} entries, ${stats.prefixCache.cachedTokens} positions, reused ${stats.prefixCache.reusedTokens} of ${stats.prefixCache.lookedUpTokens} looked-up prompt positions`);
      modes.push({ mode, turns, heartbeats, secondSession: second, backgroundJobs: background.length, stats, interference });
    } finally {
      await engine.close();
    }
  }
  return { shape: o.shape, contextLength, requestedSystemTokens: o.systemTokens, systemTokens, modes, peakRssBytes: peakRssBytes(), engine: engineInfo };
}

/** A markdown table of one result: the two modes side by side. */
export function openclawTable(r: OpenclawBenchResult): string {
  const on = r.modes.find((m) => m.mode === 'cache') ?? r.modes[0], off = r.modes.find((m) => m.mode === 'no-cache') ?? r.modes[0];
  const s = (ms: number | undefined) => (ms === undefined ? '—' : (ms / 1000).toFixed(2));
  const e = r.engine;
  const lines = [`${e.kernel} × ${e.threads}, weights ${(e.weightBytes / 2 ** 30).toFixed(2)} GiB, KV ${e.kvDtype}`, '', `| ${r.shape} (system prompt ${r.systemTokens} tokens, context ${r.contextLength}) | cache on: first token s | decode tok/s | cache off: first token s | decode tok/s |`, '|---|---|---|---|---|'];
  for (let i = 0; i < on.turns.length; i++) {
    const a = on.turns[i], b = off.turns[i];
    lines.push(`| ${a.name} (${a.promptTokens} tokens${a.newTokens !== undefined && a.newTokens < a.promptTokens ? `, ${a.newTokens} new` : ''}) | ${s(a.ttftMs)} | ${a.decodeTokensPerSec.toFixed(1)} | ${s(b?.ttftMs)} | ${b ? b.decodeTokensPerSec.toFixed(1) : '—'} |`);
  }
  const hb = on.heartbeats.map((h) => h.ttftMs);
  lines.push(`| heartbeat side turns (first; median of the rest) | ${s(hb[0])}; ${s(median(hb.slice(1)))} | | (cold, as turn 1) | |`);
  if (on.secondSession) lines.push(`| second session, same system prompt (${on.secondSession.promptTokens} tokens, ${on.secondSession.newTokens} new) | ${s(on.secondSession.ttftMs)} | ${on.secondSession.decodeTokensPerSec.toFixed(1)} | (cold, as turn 1) | |`);
  const pc = on.stats.prefixCache;
  lines.push('', `cache memory ${(pc.bytes / 2 ** 20).toFixed(0)} MiB of a ${(pc.budgetBytes / 2 ** 20).toFixed(0)} MiB budget (KV pages made: ${(on.stats.kvReservedBytes / 2 ** 20).toFixed(0)} MiB) (${pc.entries} entries, ${pc.cachedTokens} positions); ${pc.reusedTokens} of ${pc.lookedUpTokens} looked-up prompt positions reused (${(100 * pc.reusedTokens / Math.max(1, pc.lookedUpTokens)).toFixed(0)}%), ${on.backgroundJobs} background judge/teacher/re-scoring jobs`);
  if (on.interference) {
    const f = on.interference;
    lines.push(`decode alone ${f.idleTokensPerSec.toFixed(1)} tok/s; over ${s(f.prefillMs)} s of a cold ${f.prefillTokens}-token prompt's prefill ${f.duringPrefillTokensPerSec.toFixed(1)} tok/s = ${(100 * f.ratio).toFixed(0)}% of alone`);
  }
  lines.push(`peak RSS ${(r.peakRssBytes / 2 ** 30).toFixed(1)} GiB`);
  return lines.join('\n');
}
