// Paged bfloat16 KV caches (kv-pages.ts) and the native attention over them: the pages hold what
// was stored (rounded to bfloat16), copies and truncation keep the right positions and give pages
// back, the native kernel agrees with the TypeScript reference, and every query row gets the same
// bits whatever tile and batch it is computed in (what makes sampling and scoring agree).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena } from '../../src/engine/embedded/arena.ts';
import { NativeKernel, loadNativeAddon } from '../../src/engine/embedded/kernels/native.ts';
import { TsKernel } from '../../src/engine/embedded/kernels/ts.ts';
import { KvPagePool, PagedKvCache, roundBf16 } from '../../src/engine/embedded/kv-pages.ts';
import type { AttentionShape } from '../../src/engine/embedded/ops/attention.ts';
import type { PagedAttentionBatch } from '../../src/engine/embedded/kernels/kernel.ts';
import { Rng } from '../../src/engine/embedded/rng.ts';

const native = loadNativeAddon();
const skip = native.addon ? false : `native kernels unavailable here: ${native.why}`;
const bitsOf = (a: Float32Array) => Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length));

/** A cache of `n` positions of random keys/values for `layers` layers. */
function randomCache(pool: KvPagePool, n: number, rng: Rng, max = 4096): PagedKvCache {
  const c = new PagedKvCache(pool, max);
  c.reserve(n);
  const row = new Float32Array(2 * pool.kvDim), bits = new Uint32Array(row.buffer);
  for (let l = 0; l < pool.layers; l++) {
    for (let pos = 0; pos < n; pos++) {
      for (let i = 0; i < row.length; i++) row[i] = (rng.next() * 2 - 1) * 2;
      c.store(l, pos, bits, 0, pool.kvDim);
    }
  }
  c.length = n;
  return c;
}

test('paged caches: stored rows read back rounded to bfloat16; copy, truncate and release move whole pages', () => {
  const pool = new KvPagePool(3, 2, 8, null, 8);
  const rng = new Rng(1);
  const c = new PagedKvCache(pool, 100);
  c.reserve(20);
  assert.equal(c.capacity, 24, 'three pages of 8 positions');
  assert.equal(c.bytes, 3 * pool.pageBytes);
  const row = new Float32Array(32), bits = new Uint32Array(row.buffer);
  for (let i = 0; i < 32; i++) row[i] = rng.next() * 10 - 5;
  c.store(2, 13, bits, 0, 16);
  c.length = 20;
  const k = c.read(2, 'k', 20), v = c.read(2, 'v', 20);
  for (let d = 0; d < 16; d++) {
    assert.equal(k[13 * 16 + d], roundBf16(row[d]));
    assert.equal(v[13 * 16 + d], roundBf16(row[16 + d]));
    assert.ok(Math.abs(k[13 * 16 + d] - row[d]) <= Math.abs(row[d]) / 256);
  }
  assert.equal(roundBf16(1 + 2 ** -8), 1, 'a tie rounds to even');
  assert.equal(roundBf16(1 + 3 * 2 ** -8), 1 + 2 ** -6);
  const copy = new PagedKvCache(pool, 100);
  copy.copyFrom(c, 14);
  assert.equal(copy.length, 14);
  assert.equal(copy.capacity, 16);
  assert.equal(copy.pages[0], c.pages[0], 'a full page of the copied prefix is shared');
  assert.notEqual(copy.pages[1], c.pages[1], 'the partial last page is copied');
  assert.equal(c.bytes, 2.5 * pool.pageBytes, 'a shared page counts half to each holder');
  assert.deepEqual(Array.from(copy.read(2, 'v', 14)), Array.from(v.subarray(0, 14 * 16)));
  // writing into a shared page copies it first: the other holder keeps its values
  copy.truncate(5);
  copy.reserve(1);
  assert.notEqual(copy.pages[0], c.pages[0]);
  const other = new Float32Array(32).fill(7), otherBits = new Uint32Array(other.buffer);
  copy.store(2, 5, otherBits, 0, 16);
  assert.deepEqual(Array.from(c.read(2, 'k', 20)), Array.from(k), 'the original is untouched');
  assert.equal(copy.read(2, 'k', 6)[5 * 16], 7);
  c.truncate(9);
  assert.equal(c.capacity, 16, 'pages past the kept positions are let go');
  const made = pool.reservedBytes;
  c.release(); copy.release();
  const again = new PagedKvCache(pool, 100);
  again.reserve(made / pool.pageBytes * 8);
  assert.equal(pool.reservedBytes, made, 'released pages are reused before new ones are made');
  again.length = again.capacity;
  again.reserve(8);
  assert.equal(pool.reservedBytes, made + pool.pageBytes);
  assert.throws(() => again.reserve(101), /exceeds/);
  again.release();
  assert.equal(pool.usedBytes, 0);
});

test('native paged attention: agrees with the TypeScript reference, and each row has the same bits alone or in any tile and batch', { skip }, async () => {
  const arena = new Arena();
  const kernels = [new NativeKernel(arena, 1), new NativeKernel(arena, 2)];
  const ts = new TsKernel();
  const rng = new Rng(7);
  try {
    const shapes: AttentionShape[] = [
      { numHeads: 4, numKvHeads: 2, headDim: 16, slidingWindow: null },
      { numHeads: 9, numKvHeads: 3, headDim: 64, slidingWindow: null },
      { numHeads: 4, numKvHeads: 1, headDim: 8, slidingWindow: 50 },
    ];
    for (const s of shapes) {
      const kvDim = s.numKvHeads * s.headDim, qDim = s.numHeads * s.headDim, ldq = qDim + 2 * kvDim;
      const k0 = kernels[0];
      const pool = new KvPagePool(2, s.numKvHeads, s.headDim, (v) => k0.addressOf(v), 16);
      const a = randomCache(pool, 230, rng), b = randomCache(pool, 37, rng);
      // a prefill chunk of 45 rows of `a` at positions 185..229 (crossing pages, several tiles), a decode row of `b`, 3 more rows of `a`'s start
      const rows: [PagedKvCache, number][] = [
        ...Array.from({ length: 45 }, (_, i): [PagedKvCache, number] => [a, 185 + i]), [b, 36], [a, 0], [a, 1], [a, 2],
      ];
      const R = rows.length;
      const q = arena.alloc(R * ldq), out = arena.alloc(R * qDim), one = arena.alloc(qDim), ref = new Float32Array(R * qDim);
      for (let i = 0; i < q.length; i++) q[i] = rng.next() * 2 - 1;
      const batch = (from: number, n: number, o: Float32Array, layer: number): PagedAttentionBatch => ({
        q: q.subarray(from * ldq), ldq, out: o, rows: n, rowCache: rows.slice(from, from + n).map((r) => r[0]), rowPos: Int32Array.from(rows.slice(from, from + n).map((r) => r[1])), layer,
      });
      for (const layer of [0, 1]) {
        ts.attentionPaged(batch(0, R, ref, layer), s);
        for (const k of kernels) {
          k.attentionPaged(batch(0, R, out, layer), s);
          let worst = 0;
          for (let i = 0; i < out.length; i++) worst = Math.max(worst, Math.abs(out[i] - ref[i]));
          assert.ok(worst < 2e-5, `${JSON.stringify(s)} layer ${layer}: native vs reference ${worst}`);
          for (const r of [0, 7, 16, 44, 45, 46, 48]) {
            k.attentionPaged(batch(r, 1, one, layer), s);
            assert.deepEqual(bitsOf(one), bitsOf(out.subarray(r * qDim, (r + 1) * qDim)), `row ${r} alone, ${k.threads} thread(s)`);
          }
          // rows 10..29 as their own chunk: other tile boundaries
          const part = arena.alloc(20 * qDim);
          k.attentionPaged(batch(10, 20, part, layer), s);
          assert.deepEqual(bitsOf(part), bitsOf(out.subarray(10 * qDim, 30 * qDim)), 'rows 10..29 as a chunk');
          arena.free(part);
        }
      }
      a.release(); b.release();
    }
  } finally {
    for (const k of kernels) await k.close();
  }
});
