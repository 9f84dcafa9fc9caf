import { Arena } from '../src/engine/embedded/arena.ts';
import { NativeKernel } from '../src/engine/embedded/kernels/native.ts';
import { packPanels, packedSlots } from '../src/engine/embedded/kernels/packed.ts';
const arena = new Arena();
const threads = Number(process.argv[2] ?? 2);
const k = new NativeKernel(arena, threads);
const M = 1024;
for (const [N, K] of [[3072, 576], [576, 1536], [960, 576], [49152, 576]]) {
  const w = new Float32Array(N * K).map(() => Math.random() - 0.5);
  const a = arena.alloc(M * Math.max(N, K)).map(() => Math.random()), c = arena.alloc(M * Math.max(N, K));
  const p = { data: arena.alloc(packedSlots(N, K, 'f32')), rows: N, cols: K };
  packPanels(w, N, K, p.data);
  const t = (f: () => void) => { f(); const t0 = performance.now(); for (let i = 0; i < 3; i++) f(); return (performance.now() - t0) / 3; };
  const fwd = t(() => k.matmulPacked(c, a, p, M));
  const bwd = t(() => k.matmulPackedT(c, a, p, M));
  const f = 2 * M * N * K / 1e6;
  console.log(`${M}x${K}x${N}: fwd ${(f / fwd).toFixed(1)} GFLOPS (${fwd.toFixed(0)} ms), dX ${(f / bwd).toFixed(1)} GFLOPS (${bwd.toFixed(0)} ms)`);
  arena.free(p.data); arena.free(a); arena.free(c);
}
await k.close();
