// LoRA adapters: for a frozen weight W [out, in], y = W·x + s·B·(A·x) with A [r, in], B [out, r],
// s = alpha / r. Initialised as PEFT does (A Kaiming-uniform with a = √5, i.e. U(±1/√in); B zero),
// so a fresh adapter leaves the model unchanged. Parameters live in the arena so the WASM kernels
// use them in place; the frozen base weights are shared by every adapter version.
import type { ModelConfig } from './config.ts';
import type { Arena } from './arena.ts';
import { Rng } from './rng.ts';

export const LORA_TARGETS = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;
export type LoraTarget = (typeof LORA_TARGETS)[number];

export interface LoraConfig {
  rank: number;
  alpha: number;
  targets: LoraTarget[];
  seed: number;
}

export const DEFAULT_LORA: LoraConfig = { rank: 16, alpha: 32, targets: [...LORA_TARGETS], seed: 0 };

export function validateLoraConfig(c: Partial<LoraConfig>): LoraConfig {
  const cfg = { ...DEFAULT_LORA, ...c };
  if (!Number.isInteger(cfg.rank) || cfg.rank < 1) throw new RangeError(`LoRA rank must be a positive integer (got ${cfg.rank})`);
  if (!(cfg.alpha > 0)) throw new RangeError(`LoRA alpha must be positive (got ${cfg.alpha})`);
  if (cfg.targets.length === 0) throw new RangeError('LoRA needs at least one target module');
  for (const t of cfg.targets) if (!(LORA_TARGETS as readonly string[]).includes(t)) throw new RangeError(`unknown LoRA target '${t}' (known: ${LORA_TARGETS.join(', ')})`);
  return cfg;
}

/** [in, out] of each target projection */
export function moduleShape(cfg: ModelConfig, t: LoraTarget): [number, number] {
  const H = cfg.hiddenSize, I = cfg.intermediateSize, q = cfg.numHeads * cfg.headDim, kv = cfg.numKvHeads * cfg.headDim;
  switch (t) {
    case 'q_proj': return [H, q];
    case 'k_proj': case 'v_proj': return [H, kv];
    case 'o_proj': return [q, H];
    case 'gate_proj': case 'up_proj': return [H, I];
    case 'down_proj': return [I, H];
  }
}

export interface LoraModule { a: Float32Array; b: Float32Array; in: number; out: number }
export type LoraLayer = Partial<Record<LoraTarget, LoraModule>>;

export class LoraAdapter {
  readonly config: LoraConfig;
  readonly scale: number;
  readonly layers: LoraLayer[];
  private readonly arena: Arena;

  private constructor(config: LoraConfig, layers: LoraLayer[], arena: Arena) {
    this.config = config;
    this.scale = config.alpha / config.rank;
    this.layers = layers;
    this.arena = arena;
  }

  /** A new adapter shaped for `model`; `init` 'peft' (A random, B zero) or 'zeros' (gradient buffers). */
  static create(model: ModelConfig, config: LoraConfig, arena: Arena, init: 'peft' | 'zeros' = 'peft'): LoraAdapter {
    const rng = new Rng(config.seed);
    const layers: LoraLayer[] = [];
    for (let l = 0; l < model.numLayers; l++) {
      const layer: LoraLayer = {};
      for (const t of config.targets) {
        const [inDim, outDim] = moduleShape(model, t);
        const a = arena.alloc(config.rank * inDim), b = arena.alloc(outDim * config.rank);
        if (init === 'peft') {
          const bound = 1 / Math.sqrt(inDim);
          for (let i = 0; i < a.length; i++) a[i] = (rng.next() * 2 - 1) * bound;
        }
        layer[t] = { a, b, in: inDim, out: outDim };
      }
      layers.push(layer);
    }
    return new LoraAdapter(config, layers, arena);
  }

  /** Every parameter tensor, in a fixed order (layer, target, A then B). */
  *tensors(): Generator<{ layer: number; target: LoraTarget; which: 'A' | 'B'; data: Float32Array; shape: [number, number] }> {
    for (let l = 0; l < this.layers.length; l++) {
      for (const t of this.config.targets) {
        const m = this.layers[l][t]!;
        yield { layer: l, target: t, which: 'A', data: m.a, shape: [this.config.rank, m.in] };
        yield { layer: l, target: t, which: 'B', data: m.b, shape: [m.out, this.config.rank] };
      }
    }
  }

  get parameterCount(): number {
    let n = 0;
    for (const t of this.tensors()) n += t.data.length;
    return n;
  }

  /** A copy with its own storage (a published version must not change while requests use it). */
  clone(): LoraAdapter {
    const layers = this.layers.map((layer) => {
      const out: LoraLayer = {};
      for (const [t, m] of Object.entries(layer) as [LoraTarget, LoraModule][]) {
        const a = this.arena.alloc(m.a.length), b = this.arena.alloc(m.b.length);
        a.set(m.a); b.set(m.b);
        out[t] = { a, b, in: m.in, out: m.out };
      }
      return out;
    });
    return new LoraAdapter(this.config, layers, this.arena);
  }

  copyFrom(other: LoraAdapter): void {
    const src = [...other.tensors()];
    let i = 0;
    for (const t of this.tensors()) t.data.set(src[i++].data);
  }

  zero(): void { for (const t of this.tensors()) t.data.fill(0); }

  free(): void { for (const t of this.tensors()) this.arena.free(t.data); }
}
