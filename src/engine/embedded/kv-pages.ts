// Paged bfloat16 KV caches outside the WebAssembly memory: how the embedded engine serves contexts
// that float32 KV beside the weights in the 4 GiB memory cannot hold (Qwen3-0.6B: 229 KB of f32 KV
// per position, so ~11K positions beside its bf16 weights; OpenClaw sends a ~10K-token system
// prompt). A page holds PAGE_POSITIONS positions of every layer, [layer][kv head][K, V][positions][head dim]
// bfloat16 (one head's keys of a page are one contiguous run: few TLB misses, plain prefetching),
// in an ArrayBuffer of its own (never moved, so the native attention kernel reads it by
// address). A cache is a list of pages: it grows a page at a time (no copy, no power-of-two
// slack), and a released page goes back to the pool for the next cache. Pages are never handed
// back to the operating system: the pool's size is the high-water mark of the pages in use, which
// the scheduler keeps within the KV budget (kv-memory.ts).
//
// A copy shares pages: the full pages of the copied prefix are referenced, not copied (only a last,
// partly filled page is), since positions below a cache's length are never written again; a cache
// about to write into a page it shares takes a private copy of that page first. So another
// session with the same system prompt, or a scoring pass over a conversation, costs memory only for
// what it adds. A cache's `bytes` is its share of each page (page bytes / holders), so the bytes of
// all caches add up to the pages in use.
//
// Rows are rounded to bfloat16 (nearest even) when stored, whatever the batch they were computed
// in, so a reused prefix holds the very values a recompute would store.
import type { KvCache } from './kv-cache.ts';

/** Positions per page: the attention kernel's key block (a multiple of 8). */
export const PAGE_POSITIONS = 64;

/** `refs`: caches holding the page */
export interface KvPage { data: Uint16Array; address: number; refs: number }

export class KvPagePool {
  readonly positions: number;
  readonly layers: number;
  readonly kvDim: number;
  readonly kvHeads: number;
  readonly headDim: number;
  /** bytes of one position (keys and values of every layer) */
  readonly bytesPerPosition: number;
  readonly pageBytes: number;
  private readonly free: KvPage[] = [];
  private made = 0;
  private readonly addressOf: ((v: ArrayBufferView) => number) | null;

  /** `addressOf` gives a page's address for the native kernel (null: the TypeScript kernel, which reads the arrays). */
  constructor(layers: number, kvHeads: number, headDim: number, addressOf: ((v: ArrayBufferView) => number) | null, positions = PAGE_POSITIONS) {
    if (positions % 8 !== 0 || positions <= 0) throw new RangeError(`page positions must be a positive multiple of 8 (got ${positions})`);
    this.layers = layers; this.kvHeads = kvHeads; this.headDim = headDim; this.kvDim = kvHeads * headDim; this.positions = positions; this.addressOf = addressOf;
    const kvDim = this.kvDim;
    this.bytesPerPosition = layers * 2 * kvDim * 2;
    this.pageBytes = positions * this.bytesPerPosition;
  }

  /** A page held once. */
  take(): KvPage {
    const p = this.free.pop();
    if (p) { p.refs = 1; return p; }
    const data = new Uint16Array(new ArrayBuffer(this.pageBytes));
    this.made++;
    return { data, address: this.addressOf ? this.addressOf(data) : 0, refs: 1 };
  }

  /** One holder lets go of `p`; the last one returns it to the pool. */
  drop(p: KvPage): void {
    if (--p.refs === 0) this.free.push(p);
  }

  /** bytes of the pages some cache holds */
  get usedBytes(): number { return (this.made - this.free.length) * this.pageBytes; }

  /** bytes of all pages made (in use or free) */
  get reservedBytes(): number { return this.made * this.pageBytes; }
}

const f32 = new Float32Array(1), u32 = new Uint32Array(f32.buffer);

export class PagedKvCache implements KvCache {
  length = 0;
  readonly pages: KvPage[] = [];
  readonly pool: KvPagePool;
  readonly maxPositions: number;

  constructor(pool: KvPagePool, maxPositions: number) { this.pool = pool; this.maxPositions = maxPositions; }

  get capacity(): number { return this.pages.length * this.pool.positions; }
  get bytesPerPosition(): number { return this.pool.bytesPerPosition; }
  /** this cache's share of its pages: a page held by k caches counts 1/k here */
  get bytes(): number {
    let b = 0;
    for (const p of this.pages) b += this.pool.pageBytes / p.refs;
    return b;
  }

  /** Make room for `n` more positions (a shared page about to be written is copied first). */
  reserve(n: number): void {
    const need = this.length + n;
    if (need > this.maxPositions) throw new RangeError(`context length ${need} exceeds the model's maximum of ${this.maxPositions} positions`);
    const P = this.pool.positions, at = Math.floor(this.length / P);
    if (n > 0 && at < this.pages.length && this.pages[at].refs > 1) {
      const own = this.pool.take();
      own.data.set(this.pages[at].data);
      this.pool.drop(this.pages[at]);
      this.pages[at] = own;
    }
    while (this.capacity < need) this.pages.push(this.pool.take());
  }

  /** Become a copy of `from`'s first `n` positions: its full pages are shared, a last partial page is copied. */
  copyFrom(from: KvCache, n: number): void {
    if (!(from instanceof PagedKvCache) || from.pool !== this.pool) throw new Error('a paged KV cache copies only a paged cache of its own pool');
    if (n > from.length) throw new RangeError(`cannot copy ${n} positions of a cache holding ${from.length}`);
    this.truncate(0);
    const P = this.pool.positions, whole = Math.floor(n / P);
    for (let i = 0; i < whole; i++) { const p = from.pages[i]; p.refs++; this.pages.push(p); }
    if (n % P !== 0) {
      const own = this.pool.take();
      own.data.set(from.pages[whole].data);
      this.pages.push(own);
    }
    this.length = n;
  }

  /** Keep the first `n` positions; pages past them are let go. */
  truncate(n: number): void {
    this.length = Math.min(this.length, n);
    const keep = Math.ceil(this.length / this.pool.positions);
    while (this.pages.length > keep) this.pool.drop(this.pages.pop()!);
  }

  release(): void {
    this.truncate(0);
  }

  /**
   * Store the keys and values of position `pos` of layer `layer`, rounded to bfloat16: `bits` are
   * float32 bit patterns (a Uint32Array view of the rows), keys at kOff, values at vOff.
   */
  store(layer: number, pos: number, bits: Uint32Array, kOff: number, vOff: number): void {
    const { positions: P, headDim: hd, kvHeads } = this.pool;
    const page = this.pages[Math.floor(pos / P)].data;
    for (let h = 0; h < kvHeads; h++) {
      const at = ((layer * kvHeads + h) * 2 * P + (pos % P)) * hd;
      toBf16(page, at, bits, kOff + h * hd, hd);
      toBf16(page, at + P * hd, bits, vOff + h * hd, hd);
    }
  }

  /** Keys or values of layer `layer`, positions [0, n), widened to float32 ([n × kvDim]; the TypeScript kernel and tests). */
  read(layer: number, which: 'k' | 'v', n: number): Float32Array {
    const { positions: P, headDim: hd, kvHeads, kvDim } = this.pool;
    const out = new Float32Array(n * kvDim), bits = new Uint32Array(out.buffer);
    for (let pos = 0; pos < n; pos++) {
      const page = this.pages[Math.floor(pos / P)].data;
      for (let h = 0; h < kvHeads; h++) {
        const at = (((layer * kvHeads + h) * 2 + (which === 'k' ? 0 : 1)) * P + (pos % P)) * hd;
        for (let d = 0; d < hd; d++) bits[pos * kvDim + h * hd + d] = page[at + d] << 16;
      }
    }
    return out;
  }
}

/** dst[at + i] = the bfloat16 (nearest, ties to even) of the float whose bits are src[from + i], for i < n. */
function toBf16(dst: Uint16Array, at: number, src: Uint32Array, from: number, n: number): void {
  for (let i = 0; i < n; i++) {
    const b = src[from + i];
    dst[at + i] = (b & 0x7fffffff) > 0x7f800000 ? (b >>> 16) | 0x40 : (b + 0x7fff + ((b >>> 16) & 1)) >>> 16;
  }
}

/** The bfloat16 rounding `store` applies, for one float (tests). */
export function roundBf16(x: number): number {
  f32[0] = x;
  const tmp = new Uint16Array(1);
  toBf16(tmp, 0, u32, 0, 1);
  u32[0] = tmp[0] << 16;
  return f32[0];
}
