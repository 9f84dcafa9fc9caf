// Step one of the recipe: a copy of the base model folder that speaks the chat format. The added
// tokens (template.ts) get ids after the base vocabulary, rows in the tied embedding matrix, entries
// in tokenizer.json's added_tokens, and the chat template plus `<|im_end|>` as end of turn in the
// configs. A new row starts near the embeddings the model already knows — `<|im_end|>` from `</s>`
// (so the base model's sense of where a story ends carries over), the others from the mean row —
// plus a seeded random direction of typical size, so every new token is distinguishable.
import { readFileSync, writeFileSync, copyFileSync, existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { listModelTensors, readTensorF32, writeSafetensors, type TensorToWrite } from '../../engine/embedded/safetensors.ts';
import { Rng } from '../../engine/embedded/rng.ts';
import { ADDED_TOKENS, CHAT_TEMPLATE, END_OF_TURN } from './template.ts';

const EMBED = 'model.embed_tokens.weight';

/** A standard normal from two uniforms (Box–Muller), deterministic for the Rng. */
export function gaussian(rng: Rng): number {
  const u = Math.max(rng.next(), 1e-12), v = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/**
 * Rows for `count` new tokens appended to `embed` [vocab, hidden]: base row (an existing id, or the
 * mean row for -1) plus a random direction scaled to the mean distance of the rows from their mean.
 */
export function newEmbeddingRows(embed: Float32Array, vocab: number, hidden: number, bases: number[], seed: number): Float32Array {
  const mean = new Float64Array(hidden);
  for (let r = 0; r < vocab; r++) for (let j = 0; j < hidden; j++) mean[j] += embed[r * hidden + j] / vocab;
  let spread = 0;
  for (let r = 0; r < vocab; r++) {
    let d = 0;
    for (let j = 0; j < hidden; j++) d += (embed[r * hidden + j] - mean[j]) ** 2;
    spread += Math.sqrt(d) / vocab;
  }
  const rng = new Rng(seed);
  const out = new Float32Array(bases.length * hidden);
  bases.forEach((base, k) => {
    const dir = Array.from({ length: hidden }, () => gaussian(rng));
    const norm = Math.hypot(...dir);
    for (let j = 0; j < hidden; j++) {
      const from = base >= 0 ? embed[base * hidden + j] : mean[j];
      out[k * hidden + j] = from + (0.5 * spread * dir[j]) / norm;
    }
  });
  return out;
}

export interface ChatVocabResult { vocabSize: number; addedIds: Record<string, number>; endOfTurnId: number }

/** Write `outDir`: the model in `baseDir` with the chat tokens, template and end-of-turn id added. */
export function addChatVocabulary(baseDir: string, outDir: string, seed: number): ChatVocabResult {
  mkdirSync(outDir, { recursive: true });
  const readJson = (f: string) => JSON.parse(readFileSync(join(baseDir, f), 'utf8'));
  const config = readJson('config.json');
  const oldVocab: number = config.vocab_size, hidden: number = config.hidden_size;
  if (!config.tie_word_embeddings) throw new Error('the chat recipe expects tied embeddings (one matrix to extend)');
  const tokenizer = readJson('tokenizer.json');
  const known = new Set<string>(tokenizer.added_tokens.map((t: { content: string }) => t.content));
  for (const t of ADDED_TOKENS) if (known.has(t.content)) throw new Error(`${baseDir} already has the token ${t.content}`);
  const addedIds: Record<string, number> = {};
  ADDED_TOKENS.forEach((t, k) => { addedIds[t.content] = oldVocab + k; });
  const vocabSize = oldVocab + ADDED_TOKENS.length;
  const endOfTurnId = addedIds[END_OF_TURN];

  // weights: every tensor as is, the embedding matrix with the new rows appended
  const tensors: TensorToWrite[] = [];
  for (const [name, info] of listModelTensors(baseDir)) {
    const data = readTensorF32(info);
    if (name !== EMBED) { tensors.push({ name, shape: info.shape, data }); continue; }
    const eosId = tokenizer.model.vocab['</s>'] ?? 2;
    const bases = ADDED_TOKENS.map((t) => (t.content === END_OF_TURN ? eosId : -1));
    const rows = newEmbeddingRows(data, oldVocab, hidden, bases, seed);
    const grown = new Float32Array(vocabSize * hidden);
    grown.set(data);
    grown.set(rows, oldVocab * hidden);
    tensors.push({ name, shape: [vocabSize, hidden], data: grown });
  }
  writeSafetensors(join(outDir, 'model.safetensors'), tensors, { format: 'pt' });

  tokenizer.added_tokens.push(...ADDED_TOKENS.map((t) => ({
    id: addedIds[t.content], content: t.content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: t.special,
  })));
  writeFileSync(join(outDir, 'tokenizer.json'), JSON.stringify(tokenizer, null, 2));

  const eosIds = [...new Set([endOfTurnId, ...[config.eos_token_id].flat()])];
  writeFileSync(join(outDir, 'config.json'), JSON.stringify({ ...config, vocab_size: vocabSize, eos_token_id: eosIds }, null, 2));
  const gen = existsSync(join(baseDir, 'generation_config.json')) ? readJson('generation_config.json') : {};
  const genEos = [...new Set([endOfTurnId, ...[gen.eos_token_id ?? config.eos_token_id].flat()])];
  writeFileSync(join(outDir, 'generation_config.json'), JSON.stringify({ ...gen, eos_token_id: genEos }, null, 2));

  const tc = readJson('tokenizer_config.json');
  for (const t of ADDED_TOKENS) {
    tc.added_tokens_decoder[String(addedIds[t.content])] = { content: t.content, lstrip: false, normalized: false, rstrip: false, single_word: false, special: t.special };
  }
  tc.additional_special_tokens = ADDED_TOKENS.filter((t) => t.special).map((t) => t.content);
  tc.eos_token = END_OF_TURN;
  tc.chat_template = CHAT_TEMPLATE;
  writeFileSync(join(outDir, 'tokenizer_config.json'), JSON.stringify(tc, null, 2));
  writeFileSync(join(outDir, 'special_tokens_map.json'), JSON.stringify({
    bos_token: tc.bos_token, eos_token: END_OF_TURN, unk_token: tc.unk_token, additional_special_tokens: tc.additional_special_tokens,
  }, null, 2));
  if (existsSync(join(baseDir, 'tokenizer.model'))) copyFileSync(join(baseDir, 'tokenizer.model'), join(outDir, 'tokenizer.model'));
  return { vocabSize, addedIds, endOfTurnId };
}
