// The prefix cache: key/value caches of finished requests, kept so that a later request (another
// turn of the same conversation, another session with the same system prompt, a scoring pass over
// a sampled turn or a teacher prompt) starts from the longest cached prefix of its token ids
// instead of recomputing it. Entries are keyed by the weights version that computed them (0 = the
// base weights): KV computed under version v is reused only for v. The cache is bounded by a byte
// budget and evicts the least recently used entries first; the scheduler may also ask it to give
// memory back to live requests (`shrinkTo`).
//
// A hit either moves the entry's cache to the new request (when little of it would be cut off:
// the usual next-turn case, no copy) or copies the matched positions into a fresh cache (another
// session sharing only the system prompt, and every scoring pass: background scoring of turn t
// often runs after turn t + 1, and moving would cut turn t + 1's tail off its entry). Keys are exact token-id prefixes, so the reused keys
// and values are the very numbers a full recompute would produce: every row of a forward pass is
// computed in the same order whatever else is in the batch, so log-probs stay bit-identical.
import type { KvCache } from './kv-cache.ts';

interface Entry { version: number; tokens: Int32Array; cache: KvCache; lastUsed: number }

export interface PrefixCacheStats {
  budgetBytes: number;
  bytes: number;
  entries: number;
  /** positions held by all entries */
  cachedTokens: number;
  lookups: number;
  hits: number;
  /** prompt positions served from the cache / all prompt positions looked up */
  reusedTokens: number;
  lookedUpTokens: number;
  evictions: number;
}

export interface PrefixHit { cache: KvCache; length: number }

/**
 * Positions a hit may cut off an entry and still move it rather than copy it: a next turn that
 * re-tokenised the previous answer differently near its end loses little; a match on a short
 * shared start (another session) keeps the entry whole.
 */
function moveSlack(entryLength: number): number { return Math.max(16, entryLength >> 5); }

function commonPrefix(a: Int32Array, b: ArrayLike<number>, limit: number): number {
  const n = Math.min(a.length, b.length, limit);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

export class PrefixCache {
  budgetBytes: number;
  private readonly entries: Entry[] = [];
  private clock = 0;
  private readonly counters = { lookups: 0, hits: 0, reusedTokens: 0, lookedUpTokens: 0, evictions: 0 };

  private readonly newCache: () => KvCache;
  private readonly entryBytes: (c: KvCache) => number;

  /** `newCache` makes an empty cache for copies; `entryBytes` is what a cache holds in memory. */
  constructor(budgetBytes: number, newCache: () => KvCache, entryBytes: (c: KvCache) => number) {
    this.budgetBytes = Math.max(0, budgetBytes);
    this.newCache = newCache; this.entryBytes = entryBytes;
  }

  get enabled(): boolean { return this.budgetBytes > 0; }
  /** bytes the entries hold (computed: a paged entry's share of pages it shares changes as other caches come and go) */
  get usedBytes(): number {
    let b = 0;
    for (const e of this.entries) b += this.entryBytes(e.cache);
    return b;
  }

  /**
   * The longest cached prefix of `tokens` (at most `limit` positions) computed under `version`,
   * as a cache the caller owns from now on (null when nothing matches). Counted in the hit rate.
   * `mayMove` false: always a copy (background scoring must not cut the tail off a conversation's
   * newer entry, which the conversation's next turn needs).
   */
  take(version: number, tokens: ArrayLike<number>, limit: number, mayMove = true): PrefixHit | null {
    this.counters.lookups++;
    this.counters.lookedUpTokens += limit;
    let best: Entry | null = null, bestLen = 0;
    for (const e of this.entries) {
      if (e.version !== version) continue;
      const n = commonPrefix(e.tokens, tokens, limit);
      // among equal matches prefer the shortest entry: moving it loses the least
      if (n > bestLen || (n === bestLen && n > 0 && best && e.tokens.length < best.tokens.length)) { best = e; bestLen = n; }
    }
    if (!best || bestLen === 0) return null;
    this.counters.hits++;
    this.counters.reusedTokens += bestLen;
    if (mayMove && best.tokens.length - bestLen <= moveSlack(best.tokens.length)) {
      this.remove(best);
      best.cache.truncate(bestLen);
      return { cache: best.cache, length: bestLen };
    }
    best.lastUsed = ++this.clock;
    const cache = this.newCache();
    cache.copyFrom(best.cache, bestLen);
    return { cache, length: bestLen };
  }

  /**
   * Keep `cache` (whose first cache.length positions hold `tokens`' keys and values under
   * `version`); the cache now belongs to the prefix cache. Entries it extends are dropped.
   */
  insert(version: number, tokens: ArrayLike<number>, cache: KvCache): void {
    const n = cache.length;
    const bytes = this.entryBytes(cache);
    if (n === 0 || bytes > this.budgetBytes) { cache.release(); return; }
    const key = Int32Array.from({ length: n }, (_, i) => tokens[i]);
    for (let i = this.entries.length - 1; i >= 0; i--) {
      const e = this.entries[i];
      if (e.version !== version || e.tokens.length > n) continue;
      // an entry that is a prefix of the new one can never give a longer match
      if (commonPrefix(e.tokens, key, e.tokens.length) === e.tokens.length) this.drop(e);
    }
    this.entries.push({ version, tokens: key, cache, lastUsed: ++this.clock });
    this.shrinkTo(this.budgetBytes);
  }

  /** Evict least recently used entries until at most `bytes` are held; returns the bytes freed. */
  shrinkTo(bytes: number): number {
    const before = this.usedBytes;
    while (this.entries.length > 0 && this.usedBytes > bytes) {
      let lru = this.entries[0];
      for (const e of this.entries) if (e.lastUsed < lru.lastUsed) lru = e;
      this.drop(lru);
      this.counters.evictions++;
    }
    return before - this.usedBytes;
  }

  /** Forget everything computed under `version` (its weights are gone). */
  dropVersion(version: number): void {
    for (let i = this.entries.length - 1; i >= 0; i--) if (this.entries[i].version === version) this.drop(this.entries[i]);
  }

  /** Forget everything (the weights themselves changed). */
  clear(): void {
    while (this.entries.length > 0) this.drop(this.entries[0]);
  }

  stats(): PrefixCacheStats {
    let cachedTokens = 0;
    for (const e of this.entries) cachedTokens += e.tokens.length;
    return { budgetBytes: this.budgetBytes, bytes: this.usedBytes, entries: this.entries.length, cachedTokens, ...this.counters };
  }

  private remove(e: Entry): void {
    this.entries.splice(this.entries.indexOf(e), 1);
  }

  private drop(e: Entry): void {
    this.remove(e);
    e.cache.release();
  }
}
