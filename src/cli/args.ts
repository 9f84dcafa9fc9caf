// Shared argument helpers for the CLI commands.
import { resolveModel, ModelNotFound } from '../engine/embedded/resolve-model.ts';

export class UsageError extends Error { override name = 'UsageError'; }

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
  try {
    return await resolveModel(spec, (l) => process.stderr.write(l + '\n'));
  } catch (e) {
    if (e instanceof ModelNotFound) throw new UsageError(`--model: ${e.message}`);
    throw e;
  }
}
