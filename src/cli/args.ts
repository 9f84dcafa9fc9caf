// Options and value parsers that several commands share (the CLI layer itself is in command.ts).
import { existsSync, statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { opt, UsageError } from './command.ts';

export { UsageError } from './command.ts';

/** --model: a local Hugging Face model folder or a model id, else $OPENCLAW_RL_MODEL (resolved when the command runs). */
export const modelOption = opt.string('a local Hugging Face model folder (config.json, model.safetensors, tokenizer.json) or a Hugging Face model id',
  { env: 'OPENCLAW_RL_MODEL', placeholder: 'DIR|ID', nonEmpty: true });
export const kernelOption = opt.choice(['native', 'wasm', 'ts'], 'matrix kernel: native (AVX-512/AVX2 addon built at install), wasm (WebAssembly SIMD) or ts (reference)', { defaultText: 'native where built, else wasm; $OPENCLAW_RL_KERNEL' });
export const weightsDtypeOption = opt.choice(['f32', 'bf16', 'int8'], 'how the weight matrices are stored: bf16 halves their memory and the bytes read per token, int8 (a scale per row) quarters them (float32 arithmetic; LoRA stays float32; full-parameter training needs f32)', { default: 'f32', env: 'OPENCLAW_RL_WEIGHTS_DTYPE' });
export const kvDtypeOption = opt.choice(['auto', 'f32', 'bf16'], 'how serving KV caches are kept: f32 in the 4 GiB WebAssembly memory beside the weights, or bf16 in pages outside it (native or ts kernel; contexts past what f32 fits, e.g. Qwen3-0.6B with a 10K-token prompt); auto picks bf16 where the kernel reads it and f32 cannot hold the model\'s whole context', { default: 'auto' });
export const threadsOption = opt.int('worker threads for the matrix kernel', { min: 1, defaultText: 'all cores' });
export const jsonOption = opt.flag('print the result as one JSON object on stdout');

/** A number from a string, for code that reads raw strings (commands declare opt.number/opt.int instead). */
export function num(v: string | undefined, flag: string, fallback: number, check: (x: number) => boolean = Number.isFinite): number {
  if (v === undefined) return fallback;
  const x = Number(v);
  if (!Number.isFinite(x) || !check(x)) throw new UsageError(`${flag} expects a valid number, got '${v}'`);
  return x;
}

export function idList(v: string, flag: string): number[] {
  const ids = v.split(',').map((s) => s.trim()).filter((s) => s.length > 0).map(Number);
  if (ids.length === 0 || ids.some((x) => !Number.isInteger(x) || x < 0)) throw new UsageError(`${flag} expects comma-separated token ids, got '${v}'`);
  return ids;
}

/** --model, else $OPENCLAW_RL_MODEL: a local Hugging Face model folder, or a model id (cache or download). */
export async function modelDir(v: string | undefined): Promise<string> {
  const spec = v ?? process.env.OPENCLAW_RL_MODEL;
  if (!spec) throw new UsageError('no model given: pass --model DIR (a Hugging Face model folder or id) or set OPENCLAW_RL_MODEL');
  const { resolveModel, ModelNotFound } = await import('../engine/embedded/resolve-model.ts');
  try {
    return await resolveModel(spec, (l) => process.stderr.write(l + '\n'));
  } catch (e) {
    if (e instanceof ModelNotFound) throw new UsageError(`--model: ${e.message}`);
    throw e;
  }
}

/**
 * The model id `serve` answers to unless --served-model-name says otherwise, and `openclaw-config`'s default:
 * a model folder's name, or a Hugging Face id itself (as vLLM and SGLang name it).
 */
export function defaultModelId(spec: string): string {
  if (existsSync(spec) && statSync(spec).isDirectory()) return basename(resolve(spec));
  return spec;
}
