// Weight matrices held outside the 4 GiB WebAssembly memory (weight-memory.ts), the path models past
// 4 GiB take, forced here on small models so CI covers it without 8 GB of weights: every backend
// computes the same bits as with the matrices in the arena (the WebAssembly one through its staging
// window, split into several ranges too), sampling and scoring stay bit-identical at each dtype,
// LoRA trains on top, and the placement rule picks 'external' for the Qwen3-1.7B/4B shapes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Arena } from '../../src/engine/embedded/arena.ts';
import { EmbeddedRuntime } from '../../src/engine/embedded/runtime.ts';
import { TsKernel } from '../../src/engine/embedded/kernels/ts.ts';
import { WasmKernel } from '../../src/engine/embedded/kernels/wasm.ts';
import { NativeKernel, loadNativeAddon } from '../../src/engine/embedded/kernels/native.ts';
import { packPanels, packedSlots, panelSlots, type PackedMatrix } from '../../src/engine/embedded/kernels/packed.ts';
import type { Kernel } from '../../src/engine/embedded/kernels/kernel.ts';
import { allocMatrix, choosePlacement, isExternal, packedMatrixBytes } from '../../src/engine/embedded/weight-memory.ts';
import { parseConfig } from '../../src/engine/embedded/config.ts';
import { listModelTensors, readTensorF32, readTensorRowsF32 } from '../../src/engine/embedded/safetensors.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';
import { SHAPES, tinyConfig } from '../../src/bench/shapes.ts';
import { FAST_KERNELS } from '../helpers/kernels.ts';
import { STORIES, tempDir, tinyModel } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);

function bits(a: Float32Array): number[] { return Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length)); }

test('a packed product gives the same bits with its matrix outside the memory, on every backend, through a window split into ranges', async () => {
  const arena = new Arena();
  const kernels: Kernel[] = [new TsKernel(), new WasmKernel(arena, 1), new WasmKernel(arena, 2)];
  if (loadNativeAddon().addon) kernels.push(new NativeKernel(arena, 1), new NativeKernel(arena, 2));
  // a window of 3 panels: a 61-row matrix (8 panels, the last one partial) goes through it in 3 ranges
  const split = new WasmKernel(arena, 2);
  kernels.push(split);
  const rng = new Rng(9);
  try {
    for (const dtype of ['f32', 'bf16', 'int8'] as const) {
      const rows = 61, cols = 40, M = 5;
      split.stagingSlots = 3 * panelSlots(cols, dtype);
      const w = Float32Array.from({ length: rows * cols }, () => rng.next() * 2 - 1);
      const inside: PackedMatrix = { data: allocMatrix(packedSlots(rows, cols, dtype), 'arena', arena), rows, cols, dtype };
      const outside: PackedMatrix = { data: allocMatrix(packedSlots(rows, cols, dtype), 'external', arena), rows, cols, dtype };
      packPanels(w, rows, cols, inside.data, dtype);
      packPanels(w, rows, cols, outside.data, dtype);
      assert.ok(!isExternal(inside) && isExternal(outside));
      // forward: A [M × cols] (stride cols + 3), C [M × rows] (stride rows + 2), accumulating onto a start value
      const a = arena.alloc(M * (cols + 3)), g = arena.alloc(M * rows);
      for (const x of [a, g]) for (let i = 0; i < x.length; i++) x[i] = rng.next() * 2 - 1;
      const init = Float32Array.from({ length: M * (rows + 2) }, () => rng.next());
      for (const k of kernels) {
        const label = `${k.name}/${k.threads}${k === split ? ' (3-panel window)' : ''} ${dtype}`;
        const c1 = arena.alloc(M * (rows + 2)), c2 = arena.alloc(M * (rows + 2));
        c1.set(init); c2.set(init);
        k.matmulPacked(c1, a, inside, M, { lda: cols + 3, ldc: rows + 2, accumulate: true });
        k.matmulPacked(c2, a, outside, M, { lda: cols + 3, ldc: rows + 2, accumulate: true });
        assert.deepEqual(bits(c2), bits(c1), `${label}: forward`);
        // dX = dY · W: the same bits unless the window splits the sum over W's rows
        const d1 = arena.alloc(M * cols), d2 = arena.alloc(M * cols);
        k.matmulPackedT(d1, g, inside, M);
        k.matmulPackedT(d2, g, outside, M);
        if (k === split) for (let i = 0; i < d1.length; i++) assert.ok(Math.abs(d1[i] - d2[i]) < 1e-5, `${label}: dX ${d2[i]} vs ${d1[i]}`);
        else assert.deepEqual(bits(d2), bits(d1), `${label}: dX`);
        for (const x of [c1, c2, d1, d2]) arena.free(x);
      }
    }
  } finally {
    for (const k of kernels) await k.close();
  }
});

const QWEN3 = tinyModel(join(tmp.dir, 'qwen3'), tinyConfig('qwen3', { head_dim: 16 }));

for (const kernel of ['ts', ...FAST_KERNELS] as const) {
  for (const weightsDtype of ['f32', 'bf16', 'int8'] as const) {
    test(`weights outside the memory (${kernel}, ${weightsDtype}): the arena's log-probs to the bit, and sampling = scoring`, async () => {
      for (const dir of [STORIES, QWEN3]) {
        const inside = new EmbeddedRuntime(dir, { kernel, weightsDtype, weightsPlacement: 'arena' });
        const outside = new EmbeddedRuntime(dir, { kernel, weightsDtype, weightsPlacement: 'external' });
        try {
          const W = outside.model.weights;
          assert.equal(W.placement, 'external');
          assert.ok([W.embed, W.lmHead, ...W.layers.flatMap((L) => [L.wqkv, L.wo, L.wgu, L.wdown])].every(isExternal));
          // the matrices are not in the arena: it holds only the norms (and, on WebAssembly, what the steps below allocate)
          const matrices = packedMatrixBytes(outside.model.cfg, weightsDtype);
          assert.ok(inside.model.arena.usedBytes - outside.model.arena.usedBytes >= matrices, `${inside.model.arena.usedBytes} vs ${outside.model.arena.usedBytes}`);
          assert.equal(outside.info.weightBytes, inside.info.weightBytes);
          const prompt = [1, 10, 20, 30];
          for (const temperature of [1, 0.7]) {
            const params = { maxTokens: 20, temperature, topP: 1, topK: 0, seed: 11, ignoreEos: true };
            const a = inside.generate(prompt, params), b = outside.generate(prompt, params);
            assert.deepEqual(b.ids, a.ids);
            assert.deepEqual(b.logprobs, a.logprobs, 'the same log-probs as with the matrices in the arena');
            const [scored] = outside.score([{ promptIds: prompt, responseIds: b.ids }], { temperature });
            assert.deepEqual(bits(scored), bits(Float32Array.from(b.logprobs)), 'scoring reproduces the sampling log-probs exactly');
          }
        } finally {
          await inside.close(); await outside.close();
        }
      }
    });
  }
}

for (const kernel of FAST_KERNELS) {
  test(`weights outside the memory (${kernel}): LoRA trains with the same losses as in the arena; full-parameter training is refused with the reason`, async () => {
    const runs = [];
    for (const weightsPlacement of ['arena', 'external'] as const) {
      const rt = new EmbeddedRuntime(STORIES, { kernel, weightsPlacement });
      try {
        const ids = rt.tokenizer.encode('The cat sat on the mat. The cat was happy and the sun was warm.');
        const datum = { promptIds: ids.slice(0, 4), responseIds: ids.slice(4) };
        rt.configureTraining({ rank: 4, alpha: 8, seed: 1 });
        const losses: number[] = [];
        for (let i = 0; i < 4; i++) { losses.push(rt.forwardBackward([datum], { kind: 'cross_entropy' }).loss); rt.optimStep({ learningRate: 3e-2 }); }
        runs.push(losses);
        if (weightsPlacement === 'external') assert.throws(() => rt.configureTraining(null), /full-parameter training keeps a copy of the weights .* held outside it: train a LoRA adapter instead/);
      } finally {
        await rt.close();
      }
    }
    assert.ok(runs[1][3] < runs[1][0] - 0.1, `loss ${runs[1]}`);
    assert.deepEqual(runs[1], runs[0]);
  });
}

test('placement: the Qwen3-1.7B and 4B shapes go outside the memory, smaller ones stay in it; forcing the arena past it says why', () => {
  const cfg = (shape: string) => parseConfig(SHAPES[shape]);
  // 4.02B parameters: 8.05 GB of bfloat16 matrices (norms aside)
  assert.ok(Math.abs(packedMatrixBytes(cfg('4b'), 'bf16') / 8.04e9 - 1) < 0.01, `${packedMatrixBytes(cfg('4b'), 'bf16')}`);
  assert.equal(choosePlacement(cfg('4b'), 'bf16'), 'external');
  assert.equal(choosePlacement(cfg('1.7b'), 'bf16'), 'external');
  assert.equal(choosePlacement(cfg('1.7b'), 'f32'), 'external');
  assert.equal(choosePlacement(cfg('0.6b'), 'f32'), 'arena');
  assert.equal(choosePlacement(cfg('0.6b'), 'bf16', 'external'), 'external');
  assert.throws(() => choosePlacement(cfg('4b'), 'bf16', 'arena'), /the weight matrices take 7\.\d\d GiB: more than the 4 GiB WebAssembly memory can hold .* placed outside it/);
  const saved = process.env.OPENCLAW_RL_WEIGHTS_PLACEMENT;
  try {
    process.env.OPENCLAW_RL_WEIGHTS_PLACEMENT = 'external';
    assert.equal(choosePlacement(cfg('0.6b'), 'f32'), 'external');
    process.env.OPENCLAW_RL_WEIGHTS_PLACEMENT = 'disk';
    assert.throws(() => choosePlacement(cfg('0.6b'), 'f32'), /OPENCLAW_RL_WEIGHTS_PLACEMENT must be one of auto, arena, external \(got 'disk'\)/);
  } finally {
    if (saved === undefined) delete process.env.OPENCLAW_RL_WEIGHTS_PLACEMENT; else process.env.OPENCLAW_RL_WEIGHTS_PLACEMENT = saved;
  }
});

test('loading packs a matrix slice by slice into the same panels as packing it whole', () => {
  const t = listModelTensors(STORIES).get('model.layers.0.mlp.gate_proj.weight')!;
  const [rows, cols] = t.shape;
  const whole = readTensorF32(t);
  for (const dtype of ['f32', 'bf16', 'int8'] as const) {
    const once = new Float32Array(packedSlots(rows, cols, dtype)), sliced = new Float32Array(packedSlots(rows, cols, dtype));
    packPanels(whole, rows, cols, once, dtype);
    // slices of 5 rows cross panel boundaries (8 rows) at every offset
    for (let r = 0; r < rows; r += 5) {
      const n = Math.min(5, rows - r);
      packPanels(readTensorRowsF32(t, r, n, new Float32Array(n * cols)), n, cols, sliced, dtype, r);
    }
    assert.deepEqual(bits(sliced), bits(once), dtype);
  }
  assert.throws(() => readTensorRowsF32(t, rows - 1, 2, new Float32Array(2 * cols)), /rows \d+\.\.\d+ are outside its shape/);
});
