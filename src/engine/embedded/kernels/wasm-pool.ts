// Work sharing between the engine thread and its helper threads for one GEMM at a time.
// The engine thread publishes a job in a shared control block and works on it too; every thread
// claims column chunks with a compare-and-swap on a word that also carries the job's tag, so a
// helper that wakes late can never claim a chunk of a job it did not read.

export const GEN = 0, CLAIM = 1, DONE = 2, NCHUNKS = 3, CHUNK = 4, M = 5, N = 6, K = 7,
  A = 8, B = 9, C = 10, LDA = 11, LDB = 12, LDC = 13, ACC = 14, STOP = 15;
export const CTRL_INTS = 16;
/** claim word: (tag << 16) | next chunk index; the sentinel index closes a finished job */
export const CLOSED = 0xffff;
export const MAX_CHUNKS = 4096;

export type GemmFn = (a: number, b: number, c: number, M: number, n0: number, n1: number, K: number, lda: number, ldb: number, ldc: number, acc: number) => void;

/** Claim and compute chunks of job `tag` until none are left. */
export function runChunks(ctrl: Int32Array, gemm: GemmFn, tag: number): void {
  const nChunks = ctrl[NCHUNKS], chunk = ctrl[CHUNK], m = ctrl[M], n = ctrl[N], k = ctrl[K];
  const a = ctrl[A] >>> 0, b = ctrl[B] >>> 0, c = ctrl[C] >>> 0;
  const lda = ctrl[LDA], ldb = ctrl[LDB], ldc = ctrl[LDC], acc = ctrl[ACC];
  for (;;) {
    const v = Atomics.load(ctrl, CLAIM);
    if (v >>> 16 !== tag) return;
    const idx = v & 0xffff;
    if (idx >= nChunks) return;
    if (Atomics.compareExchange(ctrl, CLAIM, v, v + 1) !== v) continue;
    const n0 = idx * chunk;
    gemm(a, b, c, m, n0, Math.min(n, n0 + chunk), k, lda, ldb, ldc, acc);
    Atomics.add(ctrl, DONE, 1);
  }
}
