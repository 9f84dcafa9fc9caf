// Per-sequence key/value cache, one [capacity × kvDim] block per layer for keys and for values,
// grown by doubling. Keys are stored after RoPE, so a cached position is never rotated twice.
import type { Arena } from './arena.ts';

export class KvCache {
  length = 0;
  capacity = 0;
  k: Float32Array[] = [];
  v: Float32Array[] = [];
  private readonly arena: Arena;
  private readonly layers: number;
  private readonly kvDim: number;
  private readonly maxPositions: number;
  constructor(arena: Arena, layers: number, kvDim: number, maxPositions: number) {
    this.arena = arena; this.layers = layers; this.kvDim = kvDim; this.maxPositions = maxPositions;
  }

  /** Make room for `n` more positions. */
  reserve(n: number): void {
    const need = this.length + n;
    if (need > this.maxPositions) throw new RangeError(`context length ${need} exceeds the model's maximum of ${this.maxPositions} positions`);
    if (need <= this.capacity) return;
    const cap = Math.min(this.maxPositions, Math.max(need, this.capacity * 2, 64));
    for (let l = 0; l < this.layers; l++) {
      const k = this.arena.alloc(cap * this.kvDim), v = this.arena.alloc(cap * this.kvDim);
      if (this.capacity > 0) {
        k.set(this.k[l].subarray(0, this.length * this.kvDim)); v.set(this.v[l].subarray(0, this.length * this.kvDim));
        this.arena.free(this.k[l]); this.arena.free(this.v[l]);
      }
      this.k[l] = k; this.v[l] = v;
    }
    this.capacity = cap;
  }

  /** Drop positions after `n` (used when a prefix is reused). */
  truncate(n: number): void { this.length = Math.min(this.length, n); }

  release(): void {
    for (let l = 0; l < this.k.length; l++) { this.arena.free(this.k[l]); this.arena.free(this.v[l]); }
    this.k = []; this.v = []; this.capacity = 0; this.length = 0;
  }
}
