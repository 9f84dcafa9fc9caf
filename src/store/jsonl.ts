// Append-only JSON Lines logs. Each record is one line written with a single append, so a crash or a
// full disk can at worst leave a torn last line, which readers skip. A torn line is never continued:
// opening a log whose last line is torn, or appending after a failed append, starts a new line, so
// the next record is never glued to it. Nothing already written is rewritten.
import { appendFileSync, existsSync, readFileSync, openSync, closeSync, fsyncSync, readSync, fstatSync } from 'node:fs';

export class JsonlLog {
  readonly file: string;
  private readonly redact: ((s: string) => string) | null;
  /** the last line may be incomplete: the next append starts with a newline */
  private torn: boolean;
  constructor(file: string, redact: ((s: string) => string) | null = null) {
    this.file = file;
    this.redact = redact;
    this.torn = endsTorn(file);
  }

  /** Append one record as one line (one write). Throws what the write threw (ENOSPC, …). */
  append(record: object): void {
    let line = JSON.stringify(record);
    if (this.redact) line = this.redact(line);
    try {
      appendFileSync(this.file, (this.torn ? '\n' : '') + line + '\n');
      this.torn = false;
    } catch (e) {
      this.torn = true; // part of it may have been written
      throw e;
    }
  }

  /** Flush to disk (at shutdown). */
  sync(): void {
    if (!existsSync(this.file)) return;
    const fd = openSync(this.file, 'r+');
    try { fsyncSync(fd); } finally { closeSync(fd); }
  }

  /** Every complete record (a torn last line from a crash is skipped). */
  read(): Record<string, unknown>[] {
    if (!existsSync(this.file)) return [];
    const out: Record<string, unknown>[] = [];
    for (const line of readFileSync(this.file, 'utf8').split('\n')) {
      if (!line) continue;
      try { out.push(JSON.parse(line)); } catch { /* torn line */ }
    }
    return out;
  }
}

/** Whether `file` exists, is not empty and does not end with a newline (a torn last record). */
function endsTorn(file: string): boolean {
  if (!existsSync(file)) return false;
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return false;
    const last = Buffer.alloc(1);
    readSync(fd, last, 0, 1, size - 1);
    return last[0] !== 0x0a;
  } finally {
    closeSync(fd);
  }
}
