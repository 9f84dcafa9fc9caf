// The engine's arena allocator: size classes, and memory that stays bounded when every training
// batch has a different length.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Arena, blockBytes } from '../../src/engine/embedded/arena.ts';

test('blocks are cache-line aligned, exact up to 64 KiB, and rounded to sixteen classes per power of two above', () => {
  const table: [number, number][] = [
    [1, 64], [16, 64], [17, 128], [16384, 65536], [16385, 65536 + 4096], [20000, 81920], [2 ** 20, 2 ** 22], [2 ** 20 + 1, 2 ** 22 + 2 ** 18],
  ];
  for (const [floats, bytes] of table) assert.equal(blockBytes(floats), bytes, `${floats} floats`);
  for (let n = 1; n < 3e6; n = Math.ceil(n * 1.37)) {
    const b = blockBytes(n);
    assert.ok(b >= n * 4 && b <= Math.max(64, n * 4 * 1.0625 + 64), `${n} floats → ${b} bytes`);
  }
});

test('allocating and freeing blocks of ever-new sizes reuses memory instead of growing it', () => {
  const arena = new Arena();
  for (let i = 0; i < 400; i++) {
    const n = 200_000 + i * 37; // a new length every time, as batches of real conversations have
    const a = arena.alloc(n), b = arena.alloc(n * 3, false);
    a[n - 1] = 1; b[0] = 2;
    arena.free(a); arena.free(b);
  }
  assert.equal(arena.usedBytes, 0);
  assert.ok(arena.reservedBytes < 64 * 2 ** 20, `reserved ${arena.reservedBytes} bytes`);
});

test('a reused block comes back zero-filled', () => {
  const arena = new Arena();
  const a = arena.alloc(100_000);
  a.fill(7);
  arena.free(a);
  const b = arena.alloc(99_000);
  assert.equal(b.byteOffset, a.byteOffset);
  assert.ok(b.every((x) => x === 0));
});
