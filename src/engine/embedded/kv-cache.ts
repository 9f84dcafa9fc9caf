// Per-sequence key/value caches. `KvCache` is what the scheduler, the prefix cache and the model
// see; two kinds implement it. `ArenaKvCache` (here): float32, one [capacity × kvDim] block per
// layer for keys and for values in the WebAssembly memory, read by every kernel and by training.
// Its capacities climb a ladder of powers of two (64, 128, …) capped at the cache's maximum, so the
// arena's exact-size free lists can hand a released block straight to the next sequence that grows
// to that size. `PagedKvCache` (kv-pages.ts): bfloat16 pages outside that memory, for serving long
// contexts. Keys are stored after RoPE, so a cached position is never rotated twice.
import type { Arena } from './arena.ts';

export interface KvCache {
  /** positions whose keys and values are held */
  length: number;
  /** positions held without growing */
  readonly capacity: number;
  readonly maxPositions: number;
  /** bytes one position takes (keys and values of every layer) */
  readonly bytesPerPosition: number;
  /** bytes held */
  readonly bytes: number;
  /** make room for `n` more positions */
  reserve(n: number): void;
  /** become a copy of the first `n` positions of `src` (a cache of the same kind and model) */
  copyFrom(src: KvCache, n: number): void;
  /** drop positions after `n` (used when a prefix is reused) */
  truncate(n: number): void;
  release(): void;
}

/** The capacity a cache of `positions` positions gets (a power of two from 64, at most `max`). */
export function kvCapacity(positions: number, max: number): number {
  return Math.min(max, 2 ** Math.ceil(Math.log2(Math.max(positions, 64))));
}

export class ArenaKvCache implements KvCache {
  length = 0;
  capacity = 0;
  k: Float32Array[] = [];
  v: Float32Array[] = [];
  private readonly arena: Arena;
  private readonly layers: number;
  private readonly kvDim: number;
  readonly maxPositions: number;
  constructor(arena: Arena, layers: number, kvDim: number, maxPositions: number) {
    this.arena = arena; this.layers = layers; this.kvDim = kvDim; this.maxPositions = maxPositions;
  }

  /** Bytes one position takes (keys and values of every layer). */
  get bytesPerPosition(): number { return this.layers * 2 * this.kvDim * 4; }

  /** Bytes held in the arena. */
  get bytes(): number { return this.capacity * this.bytesPerPosition; }

  /** Make room for `n` more positions. */
  reserve(n: number): void {
    const need = this.length + n;
    if (need > this.maxPositions) throw new RangeError(`context length ${need} exceeds the model's maximum of ${this.maxPositions} positions`);
    if (need <= this.capacity) return;
    const cap = kvCapacity(need, this.maxPositions);
    for (let l = 0; l < this.layers; l++) {
      // positions past `length` are always written before they are read: no zero-fill
      const k = this.arena.alloc(cap * this.kvDim, false), v = this.arena.alloc(cap * this.kvDim, false);
      if (this.capacity > 0) {
        k.set(this.k[l].subarray(0, this.length * this.kvDim)); v.set(this.v[l].subarray(0, this.length * this.kvDim));
        this.arena.free(this.k[l]); this.arena.free(this.v[l]);
      }
      this.k[l] = k; this.v[l] = v;
    }
    this.capacity = cap;
  }

  /** Become a copy of the first `n` positions of `src` (a cache of the same model). */
  copyFrom(from: KvCache, n: number): void {
    const src = arenaKv(from);
    this.length = 0;
    this.reserve(n);
    const len = n * this.kvDim;
    for (let l = 0; l < this.layers; l++) {
      this.k[l].set(src.k[l].subarray(0, len)); this.v[l].set(src.v[l].subarray(0, len));
    }
    this.length = n;
  }

  /** Drop positions after `n` (used when a prefix is reused). */
  truncate(n: number): void { this.length = Math.min(this.length, n); }

  release(): void {
    for (let l = 0; l < this.k.length; l++) { this.arena.free(this.k[l]); this.arena.free(this.v[l]); }
    this.k = []; this.v = []; this.capacity = 0; this.length = 0;
  }
}

/** `c` as an arena cache (training and the attention backward read its float32 blocks); throws for a paged one. */
export function arenaKv(c: KvCache): ArenaKvCache {
  if (!(c instanceof ArenaKvCache)) throw new Error('this pass needs float32 KV caches in the WebAssembly memory (training and the WebAssembly kernels do not read paged bfloat16 caches)');
  return c;
}
