// Training step of the recipe, with the project's own SFT (src/trainer/sft.ts): the generated
// conversations encoded with assistant-only loss masks, full-parameter training (embeddings, norms,
// every projection; the tied embedding is also the output layer), written by the engine's saveModel.
// Full-parameter, not LoRA: the new tokens and the byte tokens the formats need ('{', '}' fall back to
// bytes the base model never saw) have untrained embedding rows, and only training those rows lets
// the model write them (measured: with LoRA rank 32 the judge stopped at "\boxed" and tool-call JSON
// came out with wrong bytes for the braces; docs/benchmarks.md).
import { EmbeddedEngine } from '../../engine/embedded/engine.ts';
import { encodeChatExample, runSft } from '../../trainer/sft.ts';
import type { Conversation } from './data.ts';

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
}

export async function trainOnConversations(initDir: string, outDir: string, conversations: Conversation[], s: TrainSettings & { seed: number; log: (l: string) => void }): Promise<Record<string, unknown>> {
  const engine = await EmbeddedEngine.load(initDir);
  try {
    const examples = conversations.map((c) => encodeChatExample(engine.tokenizer, { messages: c.messages, tools: c.tools }));
    const tokens = examples.reduce((a, e) => a + e.ids.length, 0);
    const lossTokens = examples.reduce((a, e) => a + e.mask.reduce((x, y) => x + y, 0), 0);
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
    return { ...result, sequences: examples.length, tokens, lossTokens, parameters: s.loraRank === 'full' ? 'full' : `LoRA rank ${s.loraRank}` };
  } finally {
    await engine.close();
  }
}
