// Append-only JSON Lines logs. Each record is one line written with a single append, so a crash can
// at worst leave a torn last line, which readers skip; nothing already written is ever rewritten.
import { appendFileSync, existsSync, readFileSync, openSync, closeSync, fsyncSync } from 'node:fs';

export class JsonlLog {
  readonly file: string;
  private readonly redact: ((s: string) => string) | null;
  constructor(file: string, redact: ((s: string) => string) | null = null) { this.file = file; this.redact = redact; }

  append(record: object): void {
    let line = JSON.stringify(record);
    if (this.redact) line = this.redact(line);
    appendFileSync(this.file, line + '\n');
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
