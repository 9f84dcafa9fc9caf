// Training step of the recipe, with the project's own SFT (src/trainer/sft.ts): the generated
// conversations encoded with assistant-only loss masks, LoRA on every projection (at this width a
// rank-32 adapter is most of a full update of each matrix), then the adapter merged into plain
// weights by the engine's saveModel. The embedding rows (new tokens included) stay as vocab.ts made
// them: LoRA does not train them.
import { EmbeddedEngine } from '../../engine/embedded/engine.ts';
import { encodeChatExample, runSft } from '../../trainer/sft.ts';
import type { Conversation } from './data.ts';

export interface TrainSettings {
  epochs: number;
  learningRate: number;
  /** tokens per optimizer step, about */
  batchTokens: number;
  loraRank: number;
}

export async function trainOnConversations(initDir: string, outDir: string, conversations: Conversation[], s: TrainSettings & { seed: number; log: (l: string) => void }): Promise<Record<string, unknown>> {
  const engine = await EmbeddedEngine.load(initDir);
  try {
    const examples = conversations.map((c) => encodeChatExample(engine.tokenizer, { messages: c.messages, tools: c.tools }));
    const tokens = examples.reduce((a, e) => a + e.ids.length, 0);
    const lossTokens = examples.reduce((a, e) => a + e.mask.reduce((x, y) => x + y, 0), 0);
    await engine.configureTraining({ rank: s.loraRank, alpha: s.loraRank, seed: s.seed });
    let lastShown = 0;
    const result = await runSft(engine, examples, {
      epochs: s.epochs, learningRate: s.learningRate, batchTokens: s.batchTokens, evalFraction: 0.02, seed: s.seed,
      onProgress: (p) => {
        if (p.event === 'eval' || p.step === p.totalSteps || performance.now() - lastShown > 5000) {
          lastShown = performance.now();
          s.log(`train: step ${p.step}/${p.totalSteps}  loss ${p.loss.toFixed(3)}  eval ${p.evalLoss?.toFixed(3) ?? '-'}  ${p.tokensPerSecond.toFixed(0)} tok/s  eta ${Number.isFinite(p.etaSeconds) ? p.etaSeconds.toFixed(0) : '?'} s`);
        }
      },
    });
    await engine.saveModel(outDir, 'current');
    return { ...result, sequences: examples.length, tokens, lossTokens, loraRank: s.loraRank };
  } finally {
    await engine.close();
  }
}
