// All float tensors of the embedded engine live in one shared WebAssembly memory, so the WASM
// kernels (on every thread) can read weights and activations in place, with no copies.
// The allocator is a bump pointer with free lists per size class: the model allocates the same few
// activation shapes over and over, so freed blocks are reused. Blocks above 64 KiB are rounded up to
// one of sixteen classes per power of two (at most 6.25% slack), so training batches whose lengths all
// differ (supervised fine-tuning on real conversations) reuse blocks instead of growing the memory
// with every new length until the 4 GiB limit.

const PAGE = 65536;
const ALIGN = 64; // one cache line: SIMD loads never straddle lines at row starts
const MAX_PAGES = 65536; // wasm32: 4 GiB
const EXACT_UP_TO = 65536;

/** The bytes a block of `n` floats occupies: cache-line aligned, and above 64 KiB rounded to its size class. */
export function blockBytes(n: number): number {
  const bytes = Math.max(ALIGN, Math.ceil((n * 4) / ALIGN) * ALIGN);
  if (bytes <= EXACT_UP_TO) return bytes;
  const step = 2 ** (Math.floor(Math.log2(bytes)) - 4); // a sixteenth of the power of two below
  return Math.ceil(bytes / step) * step;
}

export class Arena {
  readonly memory: WebAssembly.Memory;
  private top: number;
  private readonly freeLists = new Map<number, number[]>();
  private live = 0;
  peakBytes = 0;

  constructor(initialBytes = 16 * PAGE, reservedLowBytes = PAGE) {
    this.memory = new WebAssembly.Memory({ initial: Math.ceil(initialBytes / PAGE), maximum: MAX_PAGES, shared: true });
    this.top = reservedLowBytes; // the first page stays free for the kernel's own stack/data
  }

  get usedBytes(): number { return this.live; }

  /** A float32 array of `n` values inside the shared memory, zero-filled unless `zero` is false (for buffers the caller overwrites whole). */
  alloc(n: number, zero = true): Float32Array {
    const bytes = blockBytes(n);
    const list = this.freeLists.get(bytes);
    let ptr: number;
    if (list && list.length > 0) {
      ptr = list.pop()!;
      if (zero) new Uint8Array(this.memory.buffer, ptr, bytes).fill(0);
    } else {
      ptr = this.top;
      const need = ptr + bytes;
      if (need > MAX_PAGES * PAGE) throw new RangeError(`embedded engine out of memory: ${(need / 2 ** 30).toFixed(2)} GiB needed, WebAssembly memory is limited to 4 GiB`);
      const have = this.memory.buffer.byteLength;
      if (need > have) this.memory.grow(Math.max(Math.ceil((need - have) / PAGE), Math.min(MAX_PAGES - have / PAGE, Math.ceil(have / PAGE / 8))));
      this.top = need;
    }
    this.live += bytes;
    this.peakBytes = Math.max(this.peakBytes, this.live);
    return new Float32Array(this.memory.buffer, ptr, n);
  }

  /** Return an array obtained from `alloc` (and nothing else) to the pool. */
  free(a: Float32Array): void {
    const bytes = blockBytes(a.length);
    let list = this.freeLists.get(bytes);
    if (!list) this.freeLists.set(bytes, (list = []));
    list.push(a.byteOffset);
    this.live -= bytes;
  }

  /** Bytes reserved from the operating system by the memory (grows, never shrinks). */
  get reservedBytes(): number { return this.memory.buffer.byteLength; }
}
