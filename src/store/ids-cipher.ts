// Token ids at rest. The trainer needs the exact ids a turn was served with (prompt and answer), and
// ids decode back to the text — secrets included. Under --redact all they are stored encrypted
// (AES-256-GCM, a fresh 96-bit nonce per value, the authentication tag checked on read) with a key
// kept in a file outside the data folder, so a copy of the data folder alone reveals no text.
// Stored form: "enc1:" + base64(nonce ‖ tag ‖ ciphertext of the JSON array). Plain JSON arrays (a
// store written with --redact off or logs) still read.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync, chmodSync } from 'node:fs';
import { dirname } from 'node:path';

const PREFIX = 'enc1:';

export interface IdsCodec {
  encode(ids: number[]): string;
  decode(text: string): number[];
}

/** Ids as plain JSON (and reads encrypted values only if a key is at hand). */
export const PLAIN_IDS: IdsCodec = {
  encode: (ids) => JSON.stringify(ids),
  decode: (text) => {
    if (text.startsWith(PREFIX)) throw new Error('these token ids are encrypted: open the store with its key file (--key-file)');
    return JSON.parse(text) as number[];
  },
};

/** Read the 32-byte key from `file` (hex), creating it (mode 0600) when it does not exist. */
export function loadOrCreateKey(file: string): Buffer {
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('hex') + '\n', { mode: 0o600, flag: 'wx' });
  }
  chmodSync(file, 0o600);
  const key = Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
  if (key.length !== 32) throw new Error(`the key file ${file} must hold 32 bytes as 64 hex digits`);
  return key;
}

export class EncryptedIds implements IdsCodec {
  private readonly key: Buffer;
  constructor(key: Buffer) { this.key = key; }

  encode(ids: number[]): string {
    const nonce = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, nonce);
    const body = Buffer.concat([cipher.update(JSON.stringify(ids), 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64');
  }

  decode(text: string): number[] {
    if (!text.startsWith(PREFIX)) return JSON.parse(text) as number[];
    const raw = Buffer.from(text.slice(PREFIX.length), 'base64');
    const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12));
    decipher.setAuthTag(raw.subarray(12, 28));
    return JSON.parse(Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')) as number[];
  }
}
