// Training step of the recipe, with the project's own SFT (src/trainer/sft.ts): the generated
// conversations encoded with assistant-only loss masks, full-parameter training (embeddings, norms,
// every projection; the tied embedding is also the output layer), written by the engine's saveModel.
// Full-parameter, not LoRA: the new tokens and the byte tokens the formats need ('{', '}' fall back to
// bytes the base model never saw) have untrained embedding rows, and only training those rows lets
// the model write them (measured: with LoRA rank 32 the judge stopped at "\boxed" and tool-call JSON
// came out with wrong bytes for the braces; docs/benchmarks.md).
import { EmbeddedEngine } from '../../engine/embedded/engine.ts';
import type { ChatTokenizer } from '../../engine/embedded/tokenizer.ts';
import { encodeChatExample, runSft, type EncodedExample } from '../../trainer/sft.ts';
import type { Conversation } from './data.ts';
import { plural } from './phrasings.ts';

export interface TrainSettings {
  epochs: number;
  learningRate: number;
  /** tokens per optimizer step, about */
  batchTokens: number;
  /** LoRA rank, or 'full' for full-parameter training */
  loraRank: number | 'full';
  /** learning-rate schedule (SftOptions): default constant, no warm-up */
  schedule?: 'constant' | 'cosine';
  warmupSteps?: number;
  minLearningRateRatio?: number;
  /**
   * Loss weight of the tokens that spell the requested topic where an answer first mentions it (default 1:
   * no emphasis). Those few tokens are the decision a topic request is about, and the copy of a word that
   * takes several tokens ("b" + "all" against "b" + "un" + "n" + "y").
   */
  topicTokenWeight?: number;
  /** Loss weight of the tokens an answer copies from its prompt or a tool result (Conversation.copies; default 1). */
  copyTokenWeight?: number;
}

/**
 * The first place, among tokens with a loss (mask > 0), where one of `spellings` (token sequences) occurs and
 * `isWholeWord(start, end)` holds; null when there is none. Earlier starts win, then longer spellings.
 */
export function firstMention(ids: number[], mask: number[], spellings: number[][], isWholeWord: (start: number, end: number) => boolean): { start: number; end: number } | null {
  for (let s = 0; s < ids.length; s++) {
    if (!(mask[s] > 0)) continue;
    let best: { start: number; end: number } | null = null;
    for (const sp of spellings) {
      const e = s + sp.length;
      if (sp.length === 0 || e > ids.length || (best && e <= best.end)) continue;
      let ok = true;
      for (let k = 0; k < sp.length && ok; k++) ok = ids[s + k] === sp[k] && mask[s + k] > 0;
      if (ok && isWholeWord(s, e)) best = { start: s, end: e };
    }
    if (best) return best;
  }
  return null;
}

/** Where the token sequence `sp` occurs among tokens with a loss: the first or the last place, or null. */
export function findInLoss(ids: number[], mask: number[], sp: number[], at: 'first' | 'last'): { start: number; end: number } | null {
  if (sp.length === 0) return null;
  let found: { start: number; end: number } | null = null;
  for (let s = 0; s + sp.length <= ids.length; s++) {
    let ok = true;
    for (let k = 0; k < sp.length && ok; k++) ok = ids[s + k] === sp[k] && mask[s + k] > 0;
    if (ok) { found = { start: s, end: s + sp.length }; if (at === 'first') return found; }
  }
  return found;
}

/** `ex` with the loss weight of the tokens of each copied text (where the answers copy it) set to `weight`. */
export function weighCopies(tokenizer: ChatTokenizer, ex: EncodedExample, copies: { text: string; at: 'first' | 'last' }[], weight: number): EncodedExample {
  let mask = ex.mask;
  for (const c of copies) {
    // the text's tokens wherever it stands (after a space or a quote): without the tokenizer's leading-space token
    let sp = tokenizer.encode(c.text, false);
    while (sp.length > 1 && tokenizer.decode([sp[0]]).trim() === '') sp = sp.slice(1);
    const m = findInLoss(ex.ids, mask, sp, c.at);
    if (!m) continue;
    if (mask === ex.mask) mask = ex.mask.slice();
    for (let t = m.start; t < m.end; t++) mask[t] = weight;
  }
  return mask === ex.mask ? ex : { ids: ex.ids, mask };
}

/** `ex` with the loss weight of the tokens of the first mention of `topic` (or its plural) set to `weight`. */
export function weighTopic(tokenizer: ChatTokenizer, ex: EncodedExample, topic: string, weight: number): EncodedExample {
  const words = [topic, plural(topic)];
  // a word after a space, as answers write it: the tokens of "a dog" after those of "a"
  const after = tokenizer.encode('a', false).length;
  const spellings = words.map((w) => tokenizer.encode(`a ${w}`, false).slice(after));
  const whole = new RegExp(`^\\s*(?:${words.join('|')})(?![\\p{L}])`, 'iu');
  const m = firstMention(ex.ids, ex.mask, spellings, (s, e) => whole.test(tokenizer.decode(ex.ids.slice(s, e + 1))));
  if (!m) return ex;
  const mask = ex.mask.slice();
  for (let t = m.start; t < m.end; t++) mask[t] = weight;
  return { ids: ex.ids, mask };
}

export async function trainOnConversations(initDir: string, outDir: string, conversations: Conversation[], s: TrainSettings & { seed: number; log: (l: string) => void }): Promise<Record<string, unknown>> {
  const engine = await EmbeddedEngine.load(initDir);
  try {
    const weight = s.topicTokenWeight ?? 1, copyWeight = s.copyTokenWeight ?? 1;
    let weighted = 0, copiesWeighted = 0;
    const examples = conversations.map((c) => {
      let ex = encodeChatExample(engine.tokenizer, { messages: c.messages, tools: c.tools });
      if (weight !== 1 && c.topic) {
        const w = weighTopic(engine.tokenizer, ex, c.topic, weight);
        if (w !== ex) weighted++;
        ex = w;
      }
      if (copyWeight !== 1 && c.copies) {
        const w = weighCopies(engine.tokenizer, ex, c.copies, copyWeight);
        if (w !== ex) copiesWeighted++;
        ex = w;
      }
      return ex;
    });
    const tokens = examples.reduce((a, e) => a + e.ids.length, 0);
    const lossTokens = examples.reduce((a, e) => a + e.mask.reduce((x, y) => x + (y > 0 ? 1 : 0), 0), 0);
    await engine.configureTraining(s.loraRank === 'full' ? null : { rank: s.loraRank, alpha: s.loraRank, seed: s.seed });
    let lastShown = 0;
    const result = await runSft(engine, examples, {
      epochs: s.epochs, learningRate: s.learningRate, batchTokens: s.batchTokens, evalFraction: 0.02, seed: s.seed,
      schedule: s.schedule, warmupSteps: s.warmupSteps, minLearningRateRatio: s.minLearningRateRatio,
      onProgress: (p) => {
        if (p.event === 'eval' || p.step === p.totalSteps || performance.now() - lastShown > 5000) {
          lastShown = performance.now();
          s.log(`train: step ${p.step}/${p.totalSteps}  loss ${p.loss.toFixed(3)}  eval ${p.evalLoss?.toFixed(3) ?? '-'}  ${p.tokensPerSecond.toFixed(0)} tok/s  eta ${Number.isFinite(p.etaSeconds) ? p.etaSeconds.toFixed(0) : '?'} s`);
        }
      },
    });
    await engine.saveModel(outDir, 'current');
    return { ...result, sequences: examples.length, tokens, lossTokens, ...(weight !== 1 ? { topicTokenWeight: weight, topicMentionsWeighted: weighted } : {}), ...(copyWeight !== 1 ? { copyTokenWeight: copyWeight, conversationsWithCopiesWeighted: copiesWeighted } : {}), parameters: s.loraRank === 'full' ? 'full' : `LoRA rank ${s.loraRank}` };
  } finally {
    await engine.close();
  }
}
