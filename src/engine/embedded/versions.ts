// Weights versions of the embedded engine: version 0 is the base model; every saved version holds a
// LoRA adapter or full-parameter weights. A request pins the version it was admitted with until it
// ends (a reference count), publishing switches what new requests get, and versions older than the
// published one are freed once nothing uses them (with their prefix-cache entries). Numbers only
// grow, and a caller with a durable counter can ask for a floor (atLeast).
import { EngineError } from '../types.ts';
import type { LoraAdapter } from './lora.ts';
import type { ModelWeights } from './weights.ts';

/** A saved set of weights: the base (no adapter, no weights of its own), a LoRA adapter, or full weights. */
export interface WeightsVersion { adapter: LoraAdapter | null; weights?: ModelWeights; refs: number }

export class WeightsVersions {
  /** the version new requests are served with */
  published = 0;
  private latest = 0;
  private readonly map = new Map<number, WeightsVersion>([[0, { adapter: null, refs: 0 }]]);
  /** frees what a dropped version holds (adapter memory, full weights, its cached prefixes) */
  private readonly release: (version: number, w: WeightsVersion) => void;

  constructor(release: (version: number, w: WeightsVersion) => void) { this.release = release; }

  has(version: number): boolean { return this.map.has(version); }

  get(version: number): WeightsVersion {
    const found = this.map.get(version);
    if (!found) throw new EngineError('bad_request', `weights version ${version} does not exist (or was freed: only published, newer and in-use versions are kept)`);
    return found;
  }

  /** Versions held in memory, ascending. */
  live(): number[] { return [...this.map.keys()].sort((a, b) => a - b); }

  /** The highest version number given out so far. */
  get latestVersion(): number { return this.latest; }

  /** Numbering continues above `version` (a checkpoint's) from now on. */
  continueAfter(version: number): void { this.latest = Math.max(this.latest, version); }

  /** Add weights as a new version (not yet published), numbered above every earlier one and ≥ atLeast. */
  add(adapter: LoraAdapter | null, atLeast = 0, weights?: ModelWeights): number {
    const v = this.latest = Math.max(this.latest + 1, atLeast);
    this.map.set(v, { adapter, weights, refs: 0 });
    return v;
  }

  /** A request starts on `version`: it stays in memory until unpin. */
  pin(version: number): WeightsVersion {
    const w = this.get(version);
    w.refs++;
    return w;
  }

  unpin(version: number): void {
    const w = this.map.get(version);
    if (w) w.refs--;
    this.collect();
  }

  publish(version: number): void {
    if (!this.map.has(version)) throw new EngineError('bad_request', `weights version ${version} does not exist`);
    this.published = version;
    this.collect();
  }

  /** Free versions older than the published one that no request uses (the base stays). */
  private collect(): void {
    for (const [v, w] of this.map) {
      if (v !== 0 && v < this.published && w.refs === 0) {
        this.map.delete(v);
        this.release(v, w);
      }
    }
  }
}
