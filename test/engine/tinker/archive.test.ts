// Checkpoint archives (src/engine/tinker/archive.ts) and serve-tinker's signed archive URLs
// (src/engine/tinker/checkpoints.ts): tar round trips (plain and gzip, one wrapping folder), refusal of
// links and paths that leave the folder, torn downloads, and URLs that are tampered with or expired.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, readFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { tarFolder, readTar, extractTar, ArchiveError } from '../../../src/engine/tinker/archive.ts';
import { CheckpointStore, CheckpointError, ARCHIVE_URL_SECONDS } from '../../../src/engine/tinker/checkpoints.ts';
import { tempDir } from '../../helpers/models.ts';

function adapterFolder(dir: string): void {
  mkdirSync(join(dir, 'nested'), { recursive: true });
  writeFileSync(join(dir, 'adapter_config.json'), '{"r": 4}');
  writeFileSync(join(dir, 'adapter_model.safetensors'), Buffer.from(Array.from({ length: 1500 }, (_, i) => i % 251)));
  writeFileSync(join(dir, 'nested', `${'x'.repeat(96)}.txt`), 'long name');
}

/** A tar holding one entry with the given raw type flag and name (checksum computed). */
function oneEntryTar(name: string, type: string, data = Buffer.alloc(0)): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100);
  h.write('0000644\0', 100); h.write('0000000\0', 108); h.write('0000000\0', 116);
  h.write(data.length.toString(8).padStart(11, '0') + '\0', 124);
  h.write('00000000000\0', 136);
  h.fill(' ', 148, 156);
  h.write(type, 156);
  h.write('ustar\0', 257); h.write('00', 263);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  const pad = Buffer.alloc((512 - (data.length % 512)) % 512);
  return Buffer.concat([h, data, pad, Buffer.alloc(1024)]);
}

test('a folder tarred by serve-tinker unpacks to the same bytes, plain or gzip-compressed', () => {
  const t = tempDir('ocrl-tar-');
  try {
    adapterFolder(join(t.dir, 'src'));
    const tar = tarFolder(join(t.dir, 'src'));
    assert.equal(tar.length % 512, 0);
    for (const [name, archive] of [['plain', tar], ['gzip', gzipSync(tar)]] as const) {
      extractTar(archive, join(t.dir, name));
      for (const f of ['adapter_config.json', 'adapter_model.safetensors', `nested/${'x'.repeat(96)}.txt`]) {
        assert.deepEqual(readFileSync(join(t.dir, name, f)), readFileSync(join(t.dir, 'src', f)), `${name}: ${f}`);
      }
    }
    // no temporary folder is left beside the destination
    assert.deepEqual(readdirSync(t.dir).sort(), ['gzip', 'plain', 'src']);
  } finally { t.cleanup(); }
});

test('an archive that wraps the adapter in one top folder unpacks that folder as the checkpoint', () => {
  const t = tempDir('ocrl-tar-');
  try {
    adapterFolder(join(t.dir, 'wrap', 'final'));
    extractTar(tarFolder(join(t.dir, 'wrap')), join(t.dir, 'out'));
    assert.ok(existsSync(join(t.dir, 'out', 'adapter_config.json')));
  } finally { t.cleanup(); }
});

test('links, absolute paths, paths with .., torn archives and archives without an adapter are refused, leaving nothing behind', () => {
  const t = tempDir('ocrl-tar-');
  try {
    const dest = join(t.dir, 'out');
    const cases: [string, Buffer, RegExp][] = [
      ['symlink', oneEntryTar('adapter_config.json', '2'), /not a plain file/],
      ['hard link', oneEntryTar('adapter_config.json', '1'), /not a plain file/],
      ['dot-dot', oneEntryTar('../evil.txt', '0', Buffer.from('x')), /outside its folder/],
      ['absolute', oneEntryTar('/tmp/evil.txt', '0', Buffer.from('x')), /outside its folder/],
      ['no adapter', oneEntryTar('notes.txt', '0', Buffer.from('x')), /no adapter_config\.json/],
      ['empty', Buffer.alloc(1024), /empty/],
    ];
    for (const [what, archive, message] of cases) {
      assert.throws(() => extractTar(archive, dest), (e: Error) => e instanceof ArchiveError && message.test(e.message), what);
      assert.ok(!existsSync(dest), `${what}: nothing written`);
      assert.deepEqual(readdirSync(t.dir), [], `${what}: no temporary folder left`);
    }
    adapterFolder(join(t.dir, 'src'));
    const tar = tarFolder(join(t.dir, 'src'));
    assert.throws(() => readTar(tar.subarray(0, 1200)), /torn download/);
    const bad = Buffer.from(tar); bad[10] ^= 0xff;
    assert.throws(() => readTar(bad), /checksum/);
  } finally { t.cleanup(); }
});

test('a signed archive URL serves the checkpoint until it expires; a changed or forged token is refused', () => {
  const t = tempDir('ocrl-ckpt-');
  try {
    const store = new CheckpointStore({ dataDir: t.dir, modelName: 'm', current: () => null });
    adapterFolder(store.dir('sess:train:0', 'sampler_weights', 'final'));
    const now = Date.UTC(2026, 10, 23, 10);
    const { path, expires } = store.archiveUrl('sess:train:0', 'sampler_weights', 'final', now);
    assert.equal(expires.getTime(), now + ARCHIVE_URL_SECONDS * 1000);
    const token = path.split('/').at(-1)!;
    const { tar, filename } = store.archive(token, now + 1000);
    assert.equal(filename, 'final.tar');
    assert.ok(readTar(tar).some((e) => e.path === 'adapter_config.json'));
    const refuse = (tok: string, at: number, message: RegExp) => assert.throws(() => store.archive(tok, at), (e: Error) => e instanceof CheckpointError && e.status === 403 && message.test(e.message));
    refuse(token, now + (ARCHIVE_URL_SECONDS + 1) * 1000, /expired/);
    const [payload, sig] = token.split('.');
    const other = Buffer.from(JSON.stringify({ r: 'sess:train:0', k: 'weights', n: 'final', e: 9e9 })).toString('base64url');
    refuse(`${other}.${sig}`, now, /not valid/);
    refuse(`${payload}.${sig.slice(0, -2)}AA`, now, /not valid/);
    refuse(payload, now, /not valid/);
    // a second server (another secret) does not accept this server's URLs
    const stranger = new CheckpointStore({ dataDir: t.dir, modelName: 'm', current: () => null });
    assert.throws(() => stranger.archive(token, now), /not valid/);
    assert.throws(() => store.archiveUrl('sess:train:0', 'sampler_weights', 'missing', now), (e: Error) => e instanceof CheckpointError && e.status === 404);
    assert.throws(() => store.dir('r', 'weights', '..'), /checkpoint name/);
  } finally { t.cleanup(); }
});
