// `openclaw-rl bench <what>`
import { parseArgs } from 'node:util';
import { benchEngine } from '../bench/engine.ts';
import { benchTrain } from '../bench/train.ts';
import { benchGateway } from '../bench/gateway.ts';
import { modelDir } from './args.ts';
import { runPersonalize, writeReport, type PersonalizeResult } from '../bench/personalize.ts';
import { loadPersona, type Persona } from '../bench/persona.ts';
import { JUDGE_DEFAULTS, type JudgeConfig } from '../judge/config.ts';
import type { Method } from '../learn/advantages.ts';
import { fileURLToPath } from 'node:url';
import { existsSync } from 'node:fs';
import { resolve, join } from 'node:path';
import { UsageError, num } from './args.ts';

export async function benchCommand(argv: string[]): Promise<void> {
  const [what, ...rest] = argv;
  if (what === 'train') return benchTrainCommand(rest);
  if (what === 'gateway') return benchGatewayCommand(rest);
  if (what === 'personalize') return personalizeCommand(rest);
  if (what !== 'engine') throw new UsageError(`bench: unknown benchmark '${what ?? ''}' (available: engine, train, gateway, personalize)`);
  const { values: o } = parseArgs({
    args: rest, strict: true,
    options: {
      model: { type: 'string' }, shape: { type: 'string' }, kernel: { type: 'string' }, threads: { type: 'string' },
      json: { type: 'boolean', default: false }, 'no-gemm': { type: 'boolean', default: false },
      prefill: { type: 'string' }, decode: { type: 'string' },
    },
  });
  if (o.model && o.shape) throw new UsageError('give --model DIR or --shape 15m|135m|0.6b, not both');
  if (o.kernel && o.kernel !== 'wasm' && o.kernel !== 'ts') throw new UsageError(`--kernel must be 'wasm' or 'ts'`);
  const result = await benchEngine({
    model: o.model, shape: o.shape, kernel: o.kernel as 'wasm' | 'ts' | undefined,
    threads: o.threads ? num(o.threads, '--threads', 1, (x) => Number.isInteger(x) && x >= 1) : undefined,
    gemm: !o['no-gemm'], prefill: o.prefill ? num(o.prefill, '--prefill', 256, (x) => x >= 1) : undefined,
    decode: o.decode ? num(o.decode, '--decode', 64, (x) => x >= 1) : undefined,
    log: (l) => process.stderr.write(l + '\n'),
  });
  process.stderr.write(`peak RSS ${(result.peakRssBytes / 2 ** 20).toFixed(0)} MiB\n`);
  if (o.json) process.stdout.write(JSON.stringify(result) + '\n');
}

async function benchTrainCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({
    args: argv, strict: true,
    options: {
      model: { type: 'string' }, shape: { type: 'string' }, kernel: { type: 'string' }, threads: { type: 'string' },
      rank: { type: 'string' }, seq: { type: 'string' }, batch: { type: 'string' }, steps: { type: 'string' }, json: { type: 'boolean', default: false },
    },
  });
  if (o.model && o.shape) throw new UsageError('give --model DIR or --shape 15m|135m|0.6b, not both');
  if (o.kernel && o.kernel !== 'wasm' && o.kernel !== 'ts') throw new UsageError(`--kernel must be 'wasm' or 'ts'`);
  const int = (v: string | undefined, flag: string, d: number) => num(v, flag, d, (x) => Number.isInteger(x) && x >= 1);
  const r = await benchTrain({
    model: o.model, shape: o.shape, kernel: o.kernel as 'wasm' | 'ts' | undefined,
    threads: o.threads ? int(o.threads, '--threads', 1) : undefined,
    rank: int(o.rank, '--rank', 16), seq: int(o.seq, '--seq', 256), batch: int(o.batch, '--batch', 4), steps: int(o.steps, '--steps', 3),
    log: (l) => process.stderr.write(l + '\n'),
  });
  process.stderr.write(`${r.model}: ${r.tokensPerSec} tokens/s (step ${r.stepMs} ms for ${r.batch}×${r.seq} tokens; matmul ${(r.breakdown.matmul * 100).toFixed(0)}%, attention ${(r.breakdown.attention * 100).toFixed(0)}%, other ${(r.breakdown.other * 100).toFixed(0)}%), peak RSS ${(r.peakRssBytes / 2 ** 20).toFixed(0)} MiB\n`);
  if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
}

async function benchGatewayCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: { model: { type: 'string' }, requests: { type: 'string' }, 'max-tokens': { type: 'string' }, concurrency: { type: 'string' }, json: { type: 'boolean', default: false } } });
  const int = (v: string | undefined, flag: string, d: number) => num(v, flag, d, (x) => Number.isInteger(x) && x >= 1);
  const r = await benchGateway({
    model: await modelDir(o.model), requests: int(o.requests, '--requests', 40), maxTokens: int(o['max-tokens'], '--max-tokens', 16),
    concurrency: int(o.concurrency, '--concurrency', 16), log: (l) => process.stderr.write(l + '\n'),
  });
  process.stderr.write(`gateway overhead p50 ${r.overheadP50Ms} ms (an empty HTTP round trip: ${r.httpFloorP50Ms} ms), p99 ${r.overheadP99Ms} ms; TTFT p50 ${r.streamingTtfbP50Ms} ms; ${r.concurrency} streams ${r.concurrentTokensPerSec} tok/s\n`);
  if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
}

/** The personas shipped in personas/, by name. */
export const PERSONAS_DIR = fileURLToPath(new URL('../../personas/', import.meta.url));

export function personaFrom(file: string | undefined, name: string | undefined): Persona {
  if (file) return loadPersona(file);
  const n = name ?? 'dog-lover';
  const path = join(PERSONAS_DIR, `${n}.json`);
  if (!existsSync(path)) throw new UsageError(`no shipped persona '${n}' (pass --persona-file PATH for your own)`);
  return loadPersona(path);
}

export const PERSONALIZE_OPTIONS = {
  model: { type: 'string' }, 'persona-file': { type: 'string' }, persona: { type: 'string' }, method: { type: 'string' }, conversations: { type: 'string' },
  judge: { type: 'string' }, 'judge-url': { type: 'string' }, 'judge-model': { type: 'string' }, compare: { type: 'boolean', default: false },
  json: { type: 'boolean', default: false }, out: { type: 'string' }, seed: { type: 'string' }, 'eval-every': { type: 'string' }, 'eval-k': { type: 'string' },
  users: { type: 'string' }, 'learning-rate': { type: 'string' }, 'batch-size': { type: 'string' }, 'reward-baseline': { type: 'string' },
} as const;

export async function personalizeRuns(o: Record<string, string | boolean | undefined>, progress: (line: string) => void): Promise<PersonalizeResult[]> {
  const int = (v: unknown, flag: string, d: number) => num(v as string | undefined, flag, d, (x) => Number.isInteger(x) && x >= 1);
  const persona = personaFrom(o['persona-file'] as string | undefined, o.persona as string | undefined);
  const methods: Method[] = o.compare ? ['binary', 'opd', 'combine'] : [((o.method as string) ?? 'binary') as Method];
  for (const m of methods) if (!['binary', 'opd', 'combine'].includes(m)) throw new UsageError(`--method must be binary, opd or combine (got '${m}')`);
  const judgeKind = (o.judge as string) ?? 'lexical';
  if (!['lexical', 'self', 'llm'].includes(judgeKind)) throw new UsageError(`--judge must be lexical, self or llm`);
  const judge: JudgeConfig = { ...JUDGE_DEFAULTS, kind: judgeKind as JudgeConfig['kind'], url: o['judge-url'] as string | undefined, model: o['judge-model'] as string | undefined };
  const baseline = (o['reward-baseline'] as string | undefined) ?? 'batch';
  if (!['batch', 'group', 'none'].includes(baseline)) throw new UsageError('--reward-baseline must be batch, group or none');
  const model = await modelDir(o.model as string | undefined);
  const runs: PersonalizeResult[] = [];
  for (const method of methods) {
    runs.push(await runPersonalize({
      model, persona, method, judge, conversations: int(o.conversations, '--conversations', 64), seed: int(o.seed, '--seed', 1),
      evalEvery: int(o['eval-every'], '--eval-every', 16), evalK: int(o['eval-k'], '--eval-k', 20), users: int(o.users, '--users', 1),
      learningRate: num(o['learning-rate'] as string | undefined, '--learning-rate', 3e-3, (x) => x > 0), batchSize: int(o['batch-size'], '--batch-size', 8),
      rewardBaseline: baseline as 'batch', progress,
    }));
  }
  return runs;
}

async function personalizeCommand(argv: string[]): Promise<void> {
  const { values: o } = parseArgs({ args: argv, strict: true, options: PERSONALIZE_OPTIONS });
  const tty = process.stderr.isTTY;
  const runs = await personalizeRuns(o, (line) => process.stderr.write(tty ? `\r\x1b[K${line}` : `${line}\n`));
  if (tty) process.stderr.write('\n');
  const out = resolve(o.out ?? `personalize-${runs[0].persona}`);
  const files = await writeReport(out, runs);
  process.stderr.write(`wrote ${files.join(', ')}\n`);
  for (const r of runs) process.stderr.write(`${r.persona} · ${r.method}: ${(r.baseRate * 100).toFixed(0)}% → ${(r.finalRate * 100).toFixed(0)}% in ${r.conversations} conversations (${r.steps} steps, ${r.wallSeconds} s)\n`);
  if (o.json) process.stdout.write(JSON.stringify(runs.length === 1 ? runs[0] : runs) + '\n');
}
