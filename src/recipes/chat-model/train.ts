// Training step of the recipe: the generated conversations, loss on the assistant's tokens only,
// LoRA on every projection (at this width a rank-32 adapter is most of a full update) with a warmup
// and cosine learning-rate schedule, then the adapter merged into plain weights.
// STOPGAP: encodeConversation, the step loop and mergeAdapter stand in for src/trainer/sft.ts
// (encodeChatExample, runSft) and the engine's saveModel until those land on main.
import { copyFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EmbeddedEngine } from '../../engine/embedded/engine.ts';
import type { ChatTokenizer } from '../../engine/embedded/tokenizer.ts';
import { listModelTensors, readTensorF32, writeSafetensors, listModelTensorsIn, type TensorToWrite } from '../../engine/embedded/safetensors.ts';
import { Rng } from '../../engine/embedded/rng.ts';
import type { Datum } from '../../engine/types.ts';
import type { Conversation } from './data.ts';

export interface TrainSettings {
  epochs: number;
  learningRate: number;
  batchSequences: number;
  loraRank: number;
  warmupSteps: number;
}

/** Ids of the whole conversation and a mask that is 1 on the assistant's tokens (through its end-of-turn token). */
export function encodeConversation(tok: ChatTokenizer, c: Conversation): { ids: number[]; mask: number[] } {
  const render = (n: number, gen: boolean) => tok.encodeChat(c.messages.slice(0, n), { tools: c.tools, addGenerationPrompt: gen });
  const ids = render(c.messages.length, false);
  const mask = new Array<number>(ids.length).fill(0);
  const endOfTurn = tok.tokenId('<|im_end|>');
  c.messages.forEach((m, i) => {
    if (m.role !== 'assistant') return;
    let k = render(i, true).length;
    while (k < ids.length) { mask[k] = 1; if (ids[k++] === endOfTurn) break; }
  });
  return { ids, mask };
}

/** learning rate at `step` of `total`: linear warmup, then cosine down to a tenth */
export function scheduledRate(peak: number, step: number, total: number, warmup: number): number {
  if (step < warmup) return (peak * (step + 1)) / warmup;
  const p = (step - warmup) / Math.max(1, total - warmup);
  return peak * (0.1 + 0.9 * 0.5 * (1 + Math.cos(Math.PI * Math.min(1, p))));
}

export async function trainOnConversations(initDir: string, outDir: string, conversations: Conversation[], s: TrainSettings & { seed: number; log: (l: string) => void }): Promise<Record<string, unknown>> {
  const engine = await EmbeddedEngine.load(initDir);
  try {
    const data: Datum[] = conversations.map((c) => {
      const { ids, mask } = encodeConversation(engine.tokenizer, c);
      const first = mask.indexOf(1);
      return { promptIds: ids.slice(0, first), responseIds: ids.slice(first), lossMask: mask.slice(first) };
    });
    const tokens = data.reduce((a, d) => a + d.promptIds.length + d.responseIds.length, 0);
    const rng = new Rng(s.seed ^ 0x2545);
    await engine.configureTraining({ rank: s.loraRank, alpha: s.loraRank, seed: s.seed });
    const perEpoch = Math.ceil(data.length / s.batchSequences), total = perEpoch * s.epochs;
    const t0 = performance.now();
    let step = 0, seen = 0, lastLoss = NaN, lastShown = 0;
    for (let epoch = 0; epoch < s.epochs; epoch++) {
      const order = data.map((_, i) => i);
      for (let i = order.length - 1; i > 0; i--) { const j = Math.floor(rng.next() * (i + 1)); [order[i], order[j]] = [order[j], order[i]]; }
      for (let b = 0; b < perEpoch; b++, step++) {
        const batch = order.slice(b * s.batchSequences, (b + 1) * s.batchSequences).map((i) => data[i]);
        const m = await engine.forwardBackward(batch, { kind: 'cross_entropy' });
        await engine.optimStep({ learningRate: scheduledRate(s.learningRate, step, total, s.warmupSteps), gradClipNorm: 1 });
        seen += batch.reduce((a, d) => a + d.promptIds.length + d.responseIds.length, 0);
        lastLoss = m.loss;
        const secs = (performance.now() - t0) / 1000;
        if (step === total - 1 || performance.now() - lastShown > 5000) {
          lastShown = performance.now();
          s.log(`train: step ${step + 1}/${total}  loss ${m.loss.toFixed(3)}  ${(seen / secs).toFixed(0)} tok/s  eta ${((secs / (step + 1)) * (total - step - 1)).toFixed(0)} s`);
        }
      }
    }
    const adapterDir = join(outDir, '..', 'adapter');
    await engine.saveAdapter(adapterDir, 'current');
    mergeAdapter(initDir, adapterDir, outDir);
    return { steps: total, sequences: data.length, tokens, tokensTrained: seen, finalLoss: lastLoss, loraRank: s.loraRank, seconds: (performance.now() - t0) / 1000 };
  } finally {
    await engine.close();
  }
}

const PARENT: Record<string, string> = { q_proj: 'self_attn', k_proj: 'self_attn', v_proj: 'self_attn', o_proj: 'self_attn', gate_proj: 'mlp', up_proj: 'mlp', down_proj: 'mlp' };

/** W' = W + (alpha/r)·B·A for every adapted projection; every other file copied. */
export function mergeAdapter(modelDir: string, adapterDir: string, outDir: string): void {
  mkdirSync(outDir, { recursive: true });
  const adapter = listModelTensorsIn(join(adapterDir, 'adapter_model.safetensors'));
  const cfg = JSON.parse(readFileSync(join(adapterDir, 'adapter_config.json'), 'utf8'));
  const scale = cfg.lora_alpha / cfg.r;
  const out: TensorToWrite[] = [];
  for (const [name, info] of listModelTensors(modelDir)) {
    const w = readTensorF32(info);
    const m = name.match(/^model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.weight$/);
    const a = m && adapter.get(`base_model.model.model.layers.${m[1]}.${PARENT[m[3]]}.${m[3]}.lora_A.weight`);
    const b = m && adapter.get(`base_model.model.model.layers.${m[1]}.${PARENT[m[3]]}.${m[3]}.lora_B.weight`);
    if (a && b) {
      const A = readTensorF32(a), B = readTensorF32(b);
      const [rows, cols] = info.shape, r = a.shape[0];
      for (let i = 0; i < rows; i++) {
        for (let k = 0; k < r; k++) {
          const bik = B[i * r + k] * scale;
          if (bik === 0) continue;
          for (let j = 0; j < cols; j++) w[i * cols + j] += bik * A[k * cols + j];
        }
      }
    }
    out.push({ name, shape: info.shape, data: w });
  }
  writeSafetensors(join(outDir, 'model.safetensors'), out, { format: 'pt' });
  for (const f of readdirSync(modelDir)) if (f !== 'model.safetensors') copyFileSync(join(modelDir, f), join(outDir, f));
}
