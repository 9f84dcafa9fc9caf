// Downloads a model from the Hugging Face Hub into the standard hub cache, the layout the Python tools
// (huggingface_hub, transformers) read and write: models--org--name/blobs/<etag> holds each file once,
// snapshots/<commit>/<file> links to its blob, refs/<revision> names the commit. Files stream to disk
// (blobs/<etag>.incomplete, resumed with an HTTP Range request after an interruption), progress is reported,
// and a token (HF_TOKEN, or the token file `huggingface-cli login` writes) opens gated and private models.
//
// The Hub endpoints used (documented by huggingface_hub): GET /api/models/{repo}/revision/{revision} for the
// commit and the file list, and /{repo}/resolve/{commit}/{file}, whose headers X-Linked-Etag / ETag name the
// blob and X-Linked-Size / Content-Length its size (large files redirect to a CDN, followed for the body).
import { createWriteStream, existsSync, mkdirSync, readFileSync, renameSync, statSync, symlinkSync, writeFileSync, copyFileSync, rmSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { once } from 'node:events';

export interface HubOptions {
  /** the Hub's address: $HF_ENDPOINT, else https://huggingface.co */
  endpoint?: string;
  /** $HF_TOKEN, $HUGGING_FACE_HUB_TOKEN, else the token file in $HF_HOME (`huggingface-cli login`) */
  token?: string;
  cacheDir: string;
  revision?: string;
  /** which of the repository's files to fetch */
  wanted?: (file: string) => boolean;
  log?: (line: string) => void;
  /** a download that receives nothing for this long is retried (resuming) */
  idleTimeoutMs?: number;
  retries?: number;
}

export class HubError extends Error { override name = 'HubError'; }

export function hubEndpoint(): string { return (process.env.HF_ENDPOINT ?? 'https://huggingface.co').replace(/\/+$/, ''); }

export function hubToken(): string | undefined {
  const t = process.env.HF_TOKEN ?? process.env.HUGGING_FACE_HUB_TOKEN;
  if (t) return t.trim();
  const file = process.env.HF_TOKEN_PATH ?? join(process.env.HF_HOME ?? join(homedir(), '.cache', 'huggingface'), 'token');
  try { return readFileSync(file, 'utf8').trim() || undefined; } catch { return undefined; }
}

/** The files a model folder needs: config, tokenizer, chat template and the safetensors weights. */
export function modelFile(file: string): boolean {
  return ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja',
    'model.safetensors.index.json'].includes(file) || (/\.safetensors$/.test(file) && !file.includes('/'));
}

export const repoFolder = (cacheDir: string, repo: string) => join(cacheDir, `models--${repo.replace(/\//g, '--')}`);

const mb = (n: number) => `${(n / 2 ** 20).toFixed(n < 10 * 2 ** 20 ? 1 : 0)} MB`;

/** Downloads what is missing of `repo` at `revision` into the cache; returns the snapshot folder. */
export async function snapshotDownload(repo: string, o: HubOptions): Promise<string> {
  const endpoint = (o.endpoint ?? hubEndpoint()).replace(/\/+$/, '');
  const token = o.token ?? hubToken();
  const revision = o.revision ?? 'main';
  const log = o.log ?? (() => {});
  const auth: Record<string, string> = token ? { authorization: `Bearer ${token}` } : {};
  const info = await fetch(`${endpoint}/api/models/${repo}/revision/${encodeURIComponent(revision)}`, { headers: auth, signal: AbortSignal.timeout(30_000) });
  if (info.status === 401 || info.status === 403) {
    throw new HubError(`${repo} needs access (HTTP ${info.status}): it is gated or private${token ? ' and this token may not see it' : ''}; accept its terms on the Hub and set HF_TOKEN`);
  }
  if (info.status === 404) throw new HubError(`${repo} (revision ${revision}) is not on ${endpoint}`);
  if (!info.ok) throw new HubError(`${endpoint} answered ${info.status} for ${repo}`);
  const meta = (await info.json()) as { sha?: string; siblings?: { rfilename: string }[] };
  if (!meta.sha || !Array.isArray(meta.siblings)) throw new HubError(`${endpoint} sent no commit or file list for ${repo}`);
  const commit = meta.sha;
  const folder = repoFolder(o.cacheDir, repo);
  const snapshot = join(folder, 'snapshots', commit);
  const files = meta.siblings.map((s) => s.rfilename).filter(o.wanted ?? modelFile);
  if (!files.includes('config.json')) throw new HubError(`${repo} has no config.json: not a model this engine can load`);
  for (const file of files) {
    const pointer = join(snapshot, file);
    if (existsSync(pointer)) continue;
    await downloadFile(`${endpoint}/${repo}/resolve/${commit}/${file}`, folder, pointer, { auth, log, label: `${repo}/${file}`, idleTimeoutMs: o.idleTimeoutMs ?? 60_000, retries: o.retries ?? 5 });
  }
  mkdirSync(join(folder, 'refs'), { recursive: true });
  writeFileSync(join(folder, 'refs', revision), commit);
  return snapshot;
}

async function downloadFile(url: string, folder: string, pointer: string,
  o: { auth: Record<string, string>; log: (l: string) => void; label: string; idleTimeoutMs: number; retries: number }): Promise<void> {
  // the blob's name and size, from the headers of the resolve URL (not following a CDN redirect)
  const head = await fetch(url, { method: 'HEAD', headers: o.auth, redirect: 'manual', signal: AbortSignal.timeout(30_000) });
  if (head.status >= 400) throw new HubError(`${o.label}: HTTP ${head.status}`);
  const etag = (head.headers.get('x-linked-etag') ?? head.headers.get('etag') ?? '').replace(/^W\//, '').replace(/"/g, '');
  if (!etag || /[/\\]/.test(etag)) throw new HubError(`${o.label}: the Hub sent no usable ETag`);
  const size = Number(head.headers.get('x-linked-size') ?? head.headers.get('content-length') ?? NaN);
  const blob = join(folder, 'blobs', etag);
  mkdirSync(dirname(blob), { recursive: true });
  if (!existsSync(blob)) await fetchToBlob(url, blob, Number.isFinite(size) ? size : null, o);
  mkdirSync(dirname(pointer), { recursive: true });
  try {
    symlinkSync(relative(dirname(pointer), blob), pointer);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') return;
    copyFileSync(blob, pointer); // a file system without symbolic links
  }
}

/** Streams `url` into `blob`.incomplete, resuming from what an earlier attempt left, then renames it. */
async function fetchToBlob(url: string, blob: string, size: number | null,
  o: { auth: Record<string, string>; log: (l: string) => void; label: string; idleTimeoutMs: number; retries: number }): Promise<void> {
  const part = `${blob}.incomplete`;
  let lastReport = 0;
  for (let attempt = 0; ; attempt++) {
    const have = existsSync(part) ? statSync(part).size : 0;
    if (size !== null && have === size) break;
    if (size !== null && have > size) rmSync(part);
    const abort = new AbortController();
    let idle = setTimeout(() => abort.abort(), o.idleTimeoutMs);
    let out: ReturnType<typeof createWriteStream> | null = null;
    try {
      const r = await fetch(url, { headers: { ...o.auth, ...(have > 0 ? { range: `bytes=${have}-` } : {}) }, signal: abort.signal });
      if (r.status >= 400 && r.status !== 416) throw new HubError(`${o.label}: HTTP ${r.status}`);
      const resumed = r.status === 206;
      if (have > 0) o.log(resumed ? `${o.label}: resuming at ${mb(have)}` : `${o.label}: the server cannot resume; starting again`);
      out = createWriteStream(part, { flags: resumed ? 'a' : 'w' });
      let done = resumed ? have : 0;
      const t0 = performance.now();
      for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>) {
        clearTimeout(idle);
        idle = setTimeout(() => abort.abort(), o.idleTimeoutMs);
        if (!out.write(chunk)) await once(out, 'drain');
        done += chunk.length;
        if (performance.now() - lastReport > 2000) {
          lastReport = performance.now();
          const rate = (done - (resumed ? have : 0)) / Math.max(0.001, (performance.now() - t0) / 1000);
          o.log(`downloading ${o.label}: ${mb(done)}${size ? ` of ${mb(size)} (${Math.floor((done / size) * 100)}%)` : ''}, ${mb(rate)}/s`);
        }
      }
      out.end();
      await once(out, 'close');
      clearTimeout(idle);
      if (size === null || statSync(part).size === size) break;
      throw new HubError(`${o.label}: the download ended at ${statSync(part).size} of ${size} bytes`);
    } catch (e) {
      clearTimeout(idle);
      // what was written stays in the .incomplete file for the next attempt to resume from
      if (out && !out.closed) { out.end(); await once(out, 'close'); }
      if (e instanceof HubError && !/ended at/.test(e.message)) throw e;
      if (attempt >= o.retries) throw new HubError(`${o.label}: download failed after ${attempt + 1} attempts (${(e as Error).message})`);
      o.log(`${o.label}: interrupted (${(e as Error).message}); retrying`);
      await new Promise((r) => setTimeout(r, Math.min(500 * 2 ** attempt, 10_000)));
    }
  }
  renameSync(part, blob);
  o.log(`downloaded ${o.label}${size !== null ? ` (${mb(size)})` : ''}`);
}
