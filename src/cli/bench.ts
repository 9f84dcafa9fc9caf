// `openclaw-rl bench <what>`
import { parseArgs } from 'node:util';
import { benchEngine } from '../bench/engine.ts';
import { benchTrain } from '../bench/train.ts';
import { benchGateway } from '../bench/gateway.ts';
import { modelDir } from './args.ts';
import { UsageError, num } from './args.ts';

export async function benchCommand(argv: string[]): Promise<void> {
  const [what, ...rest] = argv;
  if (what === 'train') return benchTrainCommand(rest);
  if (what === 'gateway') return benchGatewayCommand(rest);
  if (what !== 'engine') throw new UsageError(`bench: unknown benchmark '${what ?? ''}' (available: engine, train, gateway)`);
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
    model: modelDir(o.model), requests: int(o.requests, '--requests', 40), maxTokens: int(o['max-tokens'], '--max-tokens', 16),
    concurrency: int(o.concurrency, '--concurrency', 16), log: (l) => process.stderr.write(l + '\n'),
  });
  process.stderr.write(`gateway overhead p50 ${r.overheadP50Ms} ms (an empty HTTP round trip: ${r.httpFloorP50Ms} ms), p99 ${r.overheadP99Ms} ms; TTFT p50 ${r.streamingTtfbP50Ms} ms; ${r.concurrency} streams ${r.concurrentTokensPerSec} tok/s\n`);
  if (o.json) process.stdout.write(JSON.stringify(r) + '\n');
}
