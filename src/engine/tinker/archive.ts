// Checkpoint archives as Tinker hands them out: a tarball (plain or gzip-compressed) of a PEFT-style
// adapter folder (adapter_config.json + adapter_model.safetensors), downloaded from a signed URL.
// serve-tinker writes them (tarFolder); `--trainer tinker` reads them (extractTar) to load a trained
// version into vLLM / SGLang. Extraction refuses anything but plain files and folders inside the
// destination (no links, no absolute paths, no `..`), writes into a temporary sibling and renames it
// into place, so a torn download never leaves a half-written adapter behind.
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { dirname, join, resolve, sep } from 'node:path';
import { gunzipSync } from 'node:zlib';

const BLOCK = 512;

export class ArchiveError extends Error { override name = 'ArchiveError'; }

/** Every regular file under `dir` (sorted, relative, '/'-separated). */
function filesUnder(dir: string, at = ''): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(dir, at)).sort()) {
    const rel = at ? `${at}/${name}` : name;
    const st = statSync(join(dir, rel));
    if (st.isDirectory()) out.push(...filesUnder(dir, rel));
    else if (st.isFile()) out.push(rel);
  }
  return out;
}

function octal(buf: Buffer, off: number, len: number, value: number): void {
  buf.write(value.toString(8).padStart(len - 1, '0') + '\0', off, len, 'ascii');
}

/** One ustar header for a regular file (names past 100 bytes use the 155-byte prefix field). */
function header(name: string, size: number, mtime: number): Buffer {
  const h = Buffer.alloc(BLOCK);
  let prefix = '', base = name;
  if (Buffer.byteLength(name) > 100) {
    const cut = name.lastIndexOf('/', 155);
    if (cut <= 0 || Buffer.byteLength(name.slice(cut + 1)) > 100) throw new ArchiveError(`file name too long for a tar header: ${name}`);
    prefix = name.slice(0, cut); base = name.slice(cut + 1);
  }
  h.write(base, 0, 100, 'utf8');
  octal(h, 100, 8, 0o644);
  octal(h, 108, 8, 0);
  octal(h, 116, 8, 0);
  octal(h, 124, 12, size);
  octal(h, 136, 12, Math.floor(mtime / 1000));
  h.fill(' ', 148, 156); // checksum field counts as spaces while summing
  h.write('0', 156, 1, 'ascii');
  h.write('ustar\0', 257, 6, 'ascii');
  h.write('00', 263, 2, 'ascii');
  h.write(prefix, 345, 155, 'utf8');
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 8, 'ascii');
  return h;
}

/** A tar archive (uncompressed) of every regular file under `dir`, paths relative to it. */
export function tarFolder(dir: string): Buffer {
  const parts: Buffer[] = [];
  for (const rel of filesUnder(dir)) {
    const path = join(dir, rel);
    const data = readFileSync(path);
    parts.push(header(rel, data.length, statSync(path).mtimeMs), data);
    const pad = (BLOCK - (data.length % BLOCK)) % BLOCK;
    if (pad) parts.push(Buffer.alloc(pad));
  }
  parts.push(Buffer.alloc(2 * BLOCK));
  return Buffer.concat(parts);
}

function field(h: Buffer, off: number, len: number): string {
  const end = h.indexOf(0, off);
  return h.toString('utf8', off, end >= 0 && end < off + len ? end : off + len);
}

function number(h: Buffer, off: number, len: number): number {
  const s = field(h, off, len).trim();
  const n = s === '' ? 0 : parseInt(s, 8);
  if (!Number.isFinite(n) || n < 0) throw new ArchiveError(`bad number field in a tar header: '${s}'`);
  return n;
}

function validChecksum(h: Buffer): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : h[i];
  return sum === number(h, 148, 8);
}

/** The entries of a tar (gzip-compressed or not): regular files and folders only. */
export function readTar(archive: Buffer): { path: string; data: Buffer | null }[] {
  const buf = archive[0] === 0x1f && archive[1] === 0x8b ? gunzipSync(archive) : archive;
  const out: { path: string; data: Buffer | null }[] = [];
  let off = 0, longName: string | null = null;
  while (off < buf.length) {
    if (off + BLOCK > buf.length) throw new ArchiveError('the tar archive ends inside a header (a torn download?)');
    const h = buf.subarray(off, off + BLOCK);
    if (h.every((b) => b === 0)) break;
    if (!validChecksum(h)) throw new ArchiveError(`tar header checksum mismatch at byte ${off} (not a tar archive, or a torn download)`);
    const size = number(h, 124, 12), type = String.fromCharCode(h[156] || 48);
    const body = buf.subarray(off + BLOCK, off + BLOCK + size);
    if (body.length < size) throw new ArchiveError('the tar archive ends inside a file (a torn download?)');
    off += BLOCK + Math.ceil(size / BLOCK) * BLOCK;
    const magic = field(h, 257, 6);
    const prefix = magic.startsWith('ustar') ? field(h, 345, 155) : '';
    let path = longName ?? (prefix ? `${prefix}/${field(h, 0, 100)}` : field(h, 0, 100));
    longName = null;
    if (type === 'L') { longName = body.toString('utf8').replace(/\0+$/, ''); continue; } // GNU long name
    if (type === 'x') { // pax extended header: only `path` matters here
      const m = /(?:^|\n)\d+ path=([^\n]*)\n/.exec(body.toString('utf8'));
      if (m) longName = m[1];
      continue;
    }
    if (type === 'g') continue; // pax global header
    path = path.replace(/^\.\//, '');
    if (type === '5') { out.push({ path, data: null }); continue; }
    if (type !== '0' && type !== '7') throw new ArchiveError(`the archive holds '${path}', which is not a plain file or folder (tar type '${type}'): refused`);
    out.push({ path, data: Buffer.from(body) });
  }
  return out;
}

/**
 * Unpack a checkpoint archive into `dest` (replaced atomically). When the archive wraps everything
 * in one top folder, its contents become `dest`. Refuses paths that would leave `dest`, and an archive
 * without `requiredFile` (a sampler checkpoint is a PEFT adapter folder).
 */
export function extractTar(archive: Buffer, dest: string, requiredFile: string | null = 'adapter_config.json'): void {
  const entries = readTar(archive);
  if (entries.length === 0) throw new ArchiveError('the archive is empty');
  const target = resolve(dest);
  const tmp = `${target}.partial-${process.pid}`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  try {
    for (const e of entries) {
      if (e.path.startsWith('/') || /^[A-Za-z]:/.test(e.path) || e.path.split(/[\\/]/).includes('..')) throw new ArchiveError(`the archive entry '${e.path}' points outside its folder: refused`);
      const to = resolve(tmp, e.path);
      if (to !== tmp && !to.startsWith(tmp + sep)) throw new ArchiveError(`the archive entry '${e.path}' points outside its folder: refused`);
      if (e.data === null) { mkdirSync(to, { recursive: true }); continue; }
      mkdirSync(dirname(to), { recursive: true });
      writeFileSync(to, e.data);
    }
    // one wrapping folder (e.g. `final/adapter_config.json`): its contents are the checkpoint
    let root = tmp;
    const top = readdirSync(tmp);
    if (top.length === 1 && statSync(join(tmp, top[0])).isDirectory()) root = join(tmp, top[0]);
    if (requiredFile && !existsSync(join(root, requiredFile))) {
      throw new ArchiveError(`the checkpoint archive holds no ${requiredFile} (found: ${filesUnder(root).join(', ') || 'nothing'})`);
    }
    mkdirSync(dirname(target), { recursive: true });
    rmSync(target, { recursive: true, force: true });
    renameSync(root, target);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
