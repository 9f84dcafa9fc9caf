// Folders written so that a crash at any moment leaves either the old or the new folder, never a
// mix, and the next start can finish or undo an interrupted swap.
//
// A write fills `.NAME.tmp`, fsyncs every file in it and the folder itself, and renames it to
// `.NAME.ready` (complete and durable). The swap then takes two renames: NAME → `.NAME.old`, and
// `.NAME.ready` → NAME. Afterwards `.NAME.old` becomes the kept previous version (or is deleted).
// recoverFolder() repairs each state a crash can leave:
//   .tmp (any)                 → deleted: it may be incomplete
//   .ready without NAME        → renamed to NAME (crash between the two renames)
//   .ready beside NAME         → NAME becomes the previous version, .ready becomes NAME
//   .old without NAME, .ready  → (cannot happen: .ready is renamed first)
//   .old without NAME          → renamed back to NAME (the new one never became ready)
//   .old beside NAME           → becomes the previous version, or is deleted
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

const tmpOf = (dir: string) => join(dirname(dir), `.${basename(dir)}.tmp`);
const readyOf = (dir: string) => join(dirname(dir), `.${basename(dir)}.ready`);
const oldOf = (dir: string) => join(dirname(dir), `.${basename(dir)}.old`);

/** fsync a file or a folder (a folder's fsync makes the renames inside it durable). */
export function fsyncPath(path: string): void {
  let fd: number;
  try { fd = openSync(path, 'r'); } catch { return; }
  try { fsyncSync(fd); } catch { /* some file systems refuse fsync on folders */ } finally { closeSync(fd); }
}

function fsyncTree(dir: string): void {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) fsyncTree(p); else fsyncPath(p);
  }
  fsyncPath(dir);
}

/** Put `from` where `previous` is (replacing it), or delete it when no previous version is kept. */
function retire(from: string, previous: string | undefined): void {
  if (!previous) { rmSync(from, { recursive: true, force: true }); return; }
  rmSync(previous, { recursive: true, force: true });
  renameSync(from, previous);
}

/**
 * Write `dir` atomically: `fill` writes into a temporary folder that then replaces `dir`. With
 * `previous`, the replaced folder is kept there (one older version).
 */
export function writeFolderAtomically(dir: string, fill: (tmp: string) => void, opts: { previous?: string } = {}): void {
  recoverFolder(dir, opts);
  const tmp = tmpOf(dir), ready = readyOf(dir), old = oldOf(dir);
  mkdirSync(tmp, { recursive: true });
  try {
    fill(tmp);
    fsyncTree(tmp);
  } catch (e) {
    rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  renameSync(tmp, ready);
  fsyncPath(dirname(dir));
  if (existsSync(dir)) renameSync(dir, old);
  renameSync(ready, dir);
  fsyncPath(dirname(dir));
  if (existsSync(old)) retire(old, opts.previous);
  fsyncPath(dirname(dir));
}

/** Finish or undo a swap a crash interrupted (see the file comment). Returns what it did, or null. */
export function recoverFolder(dir: string, opts: { previous?: string } = {}): string | null {
  const tmp = tmpOf(dir), ready = readyOf(dir), old = oldOf(dir);
  const done: string[] = [];
  if (existsSync(tmp)) { rmSync(tmp, { recursive: true, force: true }); done.push('deleted an incomplete write'); }
  if (existsSync(ready)) {
    if (existsSync(dir)) {
      if (existsSync(old)) retire(old, opts.previous);
      renameSync(dir, old);
    }
    renameSync(ready, dir);
    done.push('finished an interrupted swap');
  }
  if (existsSync(old)) {
    if (existsSync(dir)) retire(old, opts.previous);
    else { renameSync(old, dir); done.push('restored the folder an interrupted swap had moved aside'); }
  }
  if (done.length) fsyncPath(dirname(dir));
  return done.length ? done.join('; ') : null;
}
