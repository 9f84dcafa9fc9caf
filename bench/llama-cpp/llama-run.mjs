// llama.cpp (through node-llama-cpp's prebuilt CPU binaries) on a GGUF file, for the side-by-side
// benchmark (scripts/bench-vs-llama-cpp.ts). Plain JavaScript so that it runs from this folder's own
// node_modules (`npm install --omit=optional` here) and the project's typecheck never needs it.
//   node bench/llama-cpp/llama-run.mjs check --model F.gguf --prompt 1,2,3 --at 28,29,30,31 --greedy 16
//     → {"logits": {pos: [..V]}, "greedy": [...]}  logits after each listed prompt position; greedy tokens after the prompt
//   node bench/llama-cpp/llama-run.mjs bench --model F.gguf --prefill 256 --decode 64 --vocab V
//     → prefill and decode speed measured as `openclaw-rl bench engine` does (same prompt, greedy decode after 16 tokens)
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';
import { parseArgs } from 'node:util';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: {
    model: { type: 'string' }, prompt: { type: 'string' }, at: { type: 'string' }, greedy: { type: 'string', default: '0' },
    prefill: { type: 'string', default: '256' }, decode: { type: 'string', default: '64' }, vocab: { type: 'string' },
    threads: { type: 'string', default: '2' }, reps: { type: 'string', default: '3' },
  },
});
const mode = positionals[0];
const threads = Number(values.threads);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, maxThreads: threads });
const t0 = performance.now();
const model = await llama.loadModel({ modelPath: values.model, gpuLayers: 0 });
const loadMs = performance.now() - t0;
const prefillT = Number(values.prefill);
const context = await model.createContext({ contextSize: Math.max(512, prefillT + 128), batchSize: Math.max(512, prefillT), threads: { ideal: threads, min: threads }, sequences: 1, flashAttention: false });
const seq = context.getSequence();
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2; };

if (mode === 'check') {
  const prompt = values.prompt.split(',').map(Number), at = new Set(values.at.split(',').map(Number));
  const input = prompt.map((t, i) => (at.has(i) ? [t, { generateNext: { logits: true } }] : t));
  const out = await seq.controlledEvaluate(input);
  const logits = {};
  for (const i of at) {
    const m = out[i]?.next?.logits;
    const row = new Array(model.tokens.vocabSize ?? m.size).fill(0);
    for (const [tok, v] of m) row[tok] = v;
    logits[i] = row;
  }
  await seq.clearHistory();
  const greedy = [];
  const n = Number(values.greedy);
  if (n > 0) for await (const tok of seq.evaluate(prompt, { temperature: 0 })) { greedy.push(tok); if (greedy.length >= n) break; }
  console.log(JSON.stringify({ logits, greedy }));
} else if (mode === 'bench') {
  const V = Number(values.vocab), decodeN = Number(values.decode);
  const prompt = Array.from({ length: prefillT }, (_, i) => (i * 7919 + 3) % V);
  // prefill: the whole prompt in one batch, as `bench engine` times it (best of a few after a warm-up)
  const prefill = [];
  for (let r = 0; r <= Number(values.reps); r++) {
    await seq.clearHistory();
    const s = performance.now();
    await seq.evaluateWithoutGeneratingNewTokens(prompt);
    if (r > 0) prefill.push(performance.now() - s);
  }
  await seq.clearHistory();
  // decode: greedy after a 16-token prompt, one token per step
  const steps = [];
  const cpu0 = process.cpuUsage();
  let last = 0;
  let n = 0;
  for await (const _tok of seq.evaluate(prompt.slice(0, 16), { temperature: 0 })) {
    const now = performance.now();
    if (n > 0) steps.push(now - last); // the first yield includes the 16-token prompt
    last = now;
    if (++n > decodeN) break;
  }
  const cpu = process.cpuUsage(cpu0);
  const prefillMs = median(prefill), decodeMs = median(steps);
  console.log(JSON.stringify({
    engine: 'llama.cpp (node-llama-cpp 3.22.1, prebuilt CPU)', model: values.model, threads: context.currentThreads, loadMs: Math.round(loadMs),
    prefillTokens: prefillT, prefillTokensPerSec: +((prefillT / prefillMs) * 1000).toFixed(1),
    decodeTokens: steps.length, decodeTokensPerSec: +(1000 / decodeMs).toFixed(1), decodeMsPerToken: +decodeMs.toFixed(2),
    decodeCpuMsPerToken: +((cpu.user + cpu.system) / 1000 / (steps.length + 1)).toFixed(1),
  }));
} else {
  console.error('usage: llama-run.mjs check|bench --model FILE.gguf ...');
  process.exitCode = 2;
}
await context.dispose();
await model.dispose();
