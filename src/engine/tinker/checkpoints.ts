// serve-tinker's checkpoint store: tinker:// URIs map to folders under <data-dir>/checkpoints, and the
// REST routes Tinker clients use to find and fetch them — training runs and their checkpoints (read
// from the folders), and archive downloads. `…/checkpoints/{kind}/{name}/archive` answers 302 with a
// signed URL (HMAC over run, checkpoint and expiry, with a per-server secret) and an Expires header,
// as Tinker cloud does; that URL serves the folder as a tar without the API key, until it expires.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { CHECKPOINT_NAME } from './wire.ts';
import { tarFolder } from './archive.ts';

export type CheckpointKind = 'weights' | 'sampler_weights';

export class CheckpointError extends Error {
  readonly status: number;
  constructor(status: number, message: string) { super(message); this.status = status; }
}

/** How long a signed archive URL stays valid. */
export const ARCHIVE_URL_SECONDS = 3600;

export interface CheckpointStoreOptions {
  dataDir: string;
  modelName: string;
  /** the run being trained now (listed even before its first checkpoint), with its LoRA rank */
  current: () => { id: string; rank: number } | null;
}

export class CheckpointStore {
  private readonly o: CheckpointStoreOptions;
  private readonly secret = randomBytes(32);

  constructor(o: CheckpointStoreOptions) { this.o = o; }

  /** The folder of a checkpoint (its name checked: one path segment of safe characters). */
  dir(runId: string, kind: CheckpointKind, name: string): string {
    if (!CHECKPOINT_NAME.test(name) || name === '.' || name === '..') throw new CheckpointError(400, `checkpoint name must match ${CHECKPOINT_NAME} (got '${name}')`);
    return join(this.o.dataDir, 'checkpoints', encodeURIComponent(runId), kind, name);
  }

  runIds(): string[] {
    const root = join(this.o.dataDir, 'checkpoints');
    const ids = existsSync(root) ? readdirSync(root).map((n) => decodeURIComponent(n)) : [];
    const cur = this.o.current();
    if (cur && !ids.includes(cur.id)) ids.push(cur.id);
    return ids.sort();
  }

  checkpoints(runId: string): object[] {
    const out: object[] = [];
    for (const kind of ['weights', 'sampler_weights'] as const) {
      const dir = join(this.o.dataDir, 'checkpoints', encodeURIComponent(runId), kind);
      if (!existsSync(dir)) continue;
      // a checkpoint is a folder holding what its kind writes (not the engine's temporary or previous copies)
      const marker = kind === 'weights' ? 'trainer_state.json' : 'adapter_config.json';
      for (const name of readdirSync(dir).filter((n) => CHECKPOINT_NAME.test(n) && !n.startsWith('.') && !n.endsWith('.previous') && existsSync(join(dir, n, marker)))) {
        const st = statSync(join(dir, name));
        out.push({
          checkpoint_id: `${kind}/${name}`, checkpoint_type: kind === 'weights' ? 'training' : 'sampler', time: st.mtime.toISOString(),
          tinker_path: `tinker://${runId}/${kind}/${name}`, public: false,
        });
      }
    }
    return out;
  }

  trainingRun(runId: string): object {
    if (!this.runIds().includes(runId)) throw new CheckpointError(404, `unknown training run '${runId}'`);
    const cks = this.checkpoints(runId) as { checkpoint_type: string }[];
    const cur = this.o.current();
    return {
      training_run_id: runId, base_model: this.o.modelName, model_owner: 'local', is_lora: true, corrupted: false,
      lora_rank: cur?.id === runId ? cur.rank : null, last_request_time: new Date().toISOString(),
      last_checkpoint: cks.filter((c) => c.checkpoint_type === 'training').at(-1) ?? null,
      last_sampler_checkpoint: cks.filter((c) => c.checkpoint_type === 'sampler').at(-1) ?? null,
    };
  }

  trainingRuns(q: URLSearchParams): object {
    const ids = this.runIds();
    const limit = Math.max(1, Math.min(1000, Number(q.get('limit') ?? 20) || 20)), offset = Math.max(0, Number(q.get('offset') ?? 0) || 0);
    return { training_runs: ids.slice(offset, offset + limit).map((id) => this.trainingRun(id)), cursor: { offset, limit, total_count: ids.length } };
  }

  private sign(payload: string): Buffer { return createHmac('sha256', this.secret).update(payload).digest(); }

  /** The signed download URL (path) of a checkpoint's archive and when it expires. */
  archiveUrl(runId: string, kind: CheckpointKind, name: string, nowMs = Date.now()): { path: string; expires: Date } {
    const dir = this.dir(runId, kind, name);
    if (!existsSync(dir)) throw new CheckpointError(404, `checkpoint 'tinker://${runId}/${kind}/${name}' does not exist on this server`);
    const exp = Math.floor(nowMs / 1000) + ARCHIVE_URL_SECONDS;
    const payload = Buffer.from(JSON.stringify({ r: runId, k: kind, n: name, e: exp })).toString('base64url');
    return { path: `/api/v1/checkpoint_archives/${payload}.${this.sign(payload).toString('base64url')}`, expires: new Date(exp * 1000) };
  }

  /** The tar behind a signed URL token (checked: signature, expiry, the checkpoint still there). */
  archive(token: string, nowMs = Date.now()): { tar: Buffer; filename: string } {
    const [payload, sig] = token.split('.');
    const given = Buffer.from(sig ?? '', 'base64url'), want = this.sign(payload ?? '');
    if (!payload || given.length !== want.length || !timingSafeEqual(given, want)) throw new CheckpointError(403, 'this archive URL is not valid (ask …/archive for a new one)');
    const p = JSON.parse(Buffer.from(payload, 'base64url').toString()) as { r: string; k: CheckpointKind; n: string; e: number };
    if (p.e * 1000 < nowMs) throw new CheckpointError(403, 'this archive URL has expired (ask …/archive for a new one)');
    const dir = this.dir(p.r, p.k, p.n);
    if (!existsSync(dir)) throw new CheckpointError(404, `checkpoint 'tinker://${p.r}/${p.k}/${p.n}' no longer exists`);
    return { tar: tarFolder(dir), filename: `${p.n}.tar` };
  }
}
