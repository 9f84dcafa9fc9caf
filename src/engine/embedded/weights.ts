// Loads a Hugging Face checkpoint as float32, validating every tensor's presence and shape against
// config.json. q/k/v and gate/up are fused into one matrix each at load time so a layer runs four
// GEMMs instead of seven (fewer thread wake-ups per token), and every matrix is repacked into 8-row
// panels (kernels/packed.ts) for the fast forward kernel, as float32 or, with `dtype` bf16 or int8,
// as bfloat16 or int8 with a scale per row (norms and biases stay float32). Matrices are read and packed a slice of rows at a time,
// so loading holds no second copy of a large matrix; they go in the arena or, for models past what
// the 4 GiB WebAssembly memory holds, into buffers of their own (weight-memory.ts).
import type { ModelConfig } from './config.ts';
import type { Arena } from './arena.ts';
import { listModelTensors, readTensorF32, readTensorRowsF32, ModelFileError, type TensorInfo, type DType } from './safetensors.ts';
import { packPanels, packedSlots, type PackedMatrix, type WeightsDtype } from './kernels/packed.ts';
import { allocMatrix, choosePlacement, type PlacementChoice, type WeightsPlacement } from './weight-memory.ts';

/** Values read from the file per slice while packing a matrix (16 MiB of float32). */
const SLICE_VALUES = 1 << 22;

export interface LayerWeights {
  inputNorm: Float32Array;
  postNorm: Float32Array;
  /** [q; k; v] rows: [qDim + 2·kvDim, hidden] */
  wqkv: PackedMatrix;
  bqkv: Float32Array | null;
  qNorm: Float32Array | null;
  kNorm: Float32Array | null;
  /** [hidden, qDim] */
  wo: PackedMatrix;
  /** [gate; up] rows: [2·intermediate, hidden] */
  wgu: PackedMatrix;
  /** [hidden, intermediate] */
  wdown: PackedMatrix;
}

export interface ModelWeights {
  /** [vocab, hidden]; embedding rows are read out of the panels (unpackRow) */
  embed: PackedMatrix;
  layers: LayerWeights[];
  finalNorm: Float32Array;
  /** the embedding table itself when the embeddings are tied */
  lmHead: PackedMatrix;
  /** dtypes found in the checkpoint, and the bytes they occupy now */
  sourceDtypes: DType[];
  bytes: number;
  /** how the matrices are stored (float32 unless loaded with bf16 or int8) */
  dtype?: WeightsDtype;
  /** where the matrices live (absent: the arena) */
  placement?: WeightsPlacement;
}

export function loadWeights(dir: string, cfg: ModelConfig, arena: Arena, dtype: WeightsDtype = 'f32', placementChoice?: PlacementChoice): ModelWeights {
  const tensors = listModelTensors(dir);
  const placement = choosePlacement(cfg, dtype, placementChoice);
  const H = cfg.hiddenSize, I = cfg.intermediateSize, hd = cfg.headDim;
  const qDim = cfg.numHeads * hd, kvDim = cfg.numKvHeads * hd;
  const dtypes = new Set<DType>();
  let bytes = 0;

  const info = (name: string, shape: number[]): TensorInfo => {
    const t = tensors.get(name);
    if (!t) throw new ModelFileError(`missing tensor '${name}' in ${dir} (expected shape [${shape.join(', ')}] for model_type ${cfg.modelType})`);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new ModelFileError(`shape mismatch for '${name}': config.json implies [${shape.join(', ')}], the checkpoint has [${t.shape.join(', ')}]`);
    }
    dtypes.add(t.dtype);
    return t;
  };
  const load = (name: string, shape: number[]): Float32Array => {
    const t = info(name, shape);
    const out = arena.alloc(shape.reduce((a, d) => a * d, 1));
    bytes += out.byteLength;
    return readTensorF32(t, out);
  };
  /** stack several vectors into one (the fused q/k/v bias) */
  const stack = (parts: [string, number][]): Float32Array => {
    const out = arena.alloc(parts.reduce((a, [, r]) => a + r, 0));
    bytes += out.byteLength;
    let row = 0;
    for (const [name, rows] of parts) {
      readTensorF32(info(name, [rows]), out.subarray(row, row + rows));
      row += rows;
    }
    return out;
  };
  /** read (and stack) the parts a slice of rows at a time into a scratch buffer, packing each slice into panels */
  let scratch = new Float32Array(0);
  const packed = (parts: [string, number][], cols: number): PackedMatrix => {
    const rows = parts.reduce((a, [, r]) => a + r, 0);
    const data = allocMatrix(packedSlots(rows, cols, dtype), placement, arena);
    bytes += data.byteLength;
    const sliceRows = Math.max(1, Math.floor(SLICE_VALUES / cols));
    if (scratch.length < sliceRows * cols) scratch = new Float32Array(sliceRows * cols);
    let row0 = 0;
    for (const [name, partRows] of parts) {
      const t = info(name, [partRows, cols]);
      for (let r = 0; r < partRows; r += sliceRows) {
        const n = Math.min(sliceRows, partRows - r);
        packPanels(readTensorRowsF32(t, r, n, scratch.subarray(0, n * cols)), n, cols, data, dtype, row0 + r);
      }
      row0 += partRows;
    }
    return { data, rows, cols, ...(dtype !== 'f32' ? { dtype } : {}) };
  };

  const embed = packed([['model.embed_tokens.weight', cfg.vocabSize]], H);
  const layers: LayerWeights[] = [];
  for (let l = 0; l < cfg.numLayers; l++) {
    const p = `model.layers.${l}.`;
    const a = `${p}self_attn.`;
    layers.push({
      inputNorm: load(`${p}input_layernorm.weight`, [H]),
      postNorm: load(`${p}post_attention_layernorm.weight`, [H]),
      wqkv: packed([[`${a}q_proj.weight`, qDim], [`${a}k_proj.weight`, kvDim], [`${a}v_proj.weight`, kvDim]], H),
      bqkv: cfg.attentionBias ? stack([[`${a}q_proj.bias`, qDim], [`${a}k_proj.bias`, kvDim], [`${a}v_proj.bias`, kvDim]]) : null,
      qNorm: cfg.qkNorm ? load(`${a}q_norm.weight`, [hd]) : null,
      kNorm: cfg.qkNorm ? load(`${a}k_norm.weight`, [hd]) : null,
      wo: packed([[`${a}o_proj.weight`, H]], qDim),
      wgu: packed([[`${p}mlp.gate_proj.weight`, I], [`${p}mlp.up_proj.weight`, I]], H),
      wdown: packed([[`${p}mlp.down_proj.weight`, H]], I),
    });
  }
  const finalNorm = load('model.norm.weight', [H]);
  let lmHead = embed;
  if (!cfg.tieWordEmbeddings) {
    if (!tensors.has('lm_head.weight')) throw new ModelFileError(`missing tensor 'lm_head.weight' (tie_word_embeddings is false in config.json)`);
    lmHead = packed([['lm_head.weight', cfg.vocabSize]], H);
  }
  return { embed, layers, finalNorm, lmHead, sourceDtypes: [...dtypes], bytes, dtype, placement };
}
