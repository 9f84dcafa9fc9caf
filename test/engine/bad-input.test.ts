// Broken model folders fail at load time with messages that say what is wrong.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync, readFileSync, copyFileSync, truncateSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Transformer } from '../../src/engine/embedded/model.ts';
import { EmbeddedEngine } from '../../src/engine/embedded/engine.ts';
import { tinyConfig } from '../../src/bench/shapes.ts';
import { tempDir, tinyModel } from '../helpers/models.ts';

const tmp = tempDir();
after(tmp.cleanup);
const good = tinyModel(join(tmp.dir, 'good'), tinyConfig('llama'));

/** a copy of the good model with one file replaced or edited */
function variant(name: string, edit: (dir: string) => void): string {
  const dir = join(tmp.dir, name);
  mkdirSync(dir, { recursive: true });
  for (const f of ['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(good, f), join(dir, f));
  edit(dir);
  return dir;
}

function editHeader(dir: string, change: (h: Record<string, { dtype: string; shape: number[]; data_offsets: number[] }>) => void): void {
  const file = join(dir, 'model.safetensors');
  const buf = readFileSync(file);
  const n = Number(buf.readBigUInt64LE(0));
  const header = JSON.parse(buf.subarray(8, 8 + n).toString());
  change(header);
  let json = JSON.stringify(header);
  if (json.length > n) throw new Error('edited header grew');
  json = json.padEnd(n, ' ');
  buf.write(json, 8);
  writeFileSync(file, buf);
}

const cases: [string, () => string, RegExp][] = [
  ['missing folder', () => join(tmp.dir, 'nope'), /model folder not found/],
  ['missing config.json', () => { const d = join(tmp.dir, 'empty'); mkdirSync(d, { recursive: true }); return d; }, /config\.json not found/],
  ['config.json not JSON', () => variant('bad-config', (d) => writeFileSync(join(d, 'config.json'), '{"model_type": "llama",')), /config\.json .* is not valid JSON/],
  ['unsupported model_type', () => variant('gpt2', (d) => writeFileSync(join(d, 'config.json'), JSON.stringify({ ...tinyConfig('llama'), model_type: 'gpt2' }))), /unsupported model_type "gpt2": the embedded engine supports llama, mistral, qwen2, qwen3/],
  ['unsupported rope scaling', () => variant('longrope', (d) => writeFileSync(join(d, 'config.json'), JSON.stringify({ ...tinyConfig('llama'), rope_scaling: { rope_type: 'longrope', factor: 4 } }))), /rope_scaling type 'longrope' is not supported \(supported: default, linear, llama3, yarn\)/],
  ['missing weights', () => { const d = join(tmp.dir, 'config-only'); mkdirSync(d); copyFileSync(join(good, 'config.json'), join(d, 'config.json')); return d; }, /no weights in .*: expected model\.safetensors or model\.safetensors\.index\.json/],
  ['header length beyond the file', () => variant('bad-len', (d) => { const f = join(d, 'model.safetensors'); const b = readFileSync(f); b.writeBigUInt64LE(10n ** 12n, 0); writeFileSync(f, b); }), /corrupt safetensors header \(declared header length/],
  ['header not JSON', () => variant('bad-json', (d) => { const f = join(d, 'model.safetensors'); const b = readFileSync(f); b.write('{{{{', 8); writeFileSync(f, b); }), /corrupt safetensors header \(not valid JSON/],
  ['file too short', () => variant('short', (d) => writeFileSync(join(d, 'model.safetensors'), Buffer.from([1, 2, 3]))), /is not a safetensors file/],
  ['truncated data', () => variant('truncated', (d) => { const f = join(d, 'model.safetensors'); truncateSync(f, statSync(f).size - 100); }), /runs past the end of the file/],
  ['unsupported dtype', () => variant('int8', (d) => editHeader(d, (h) => { h['model.norm.weight'].dtype = 'I8'; })), /tensor 'model\.norm\.weight' has unsupported dtype I8 \(supported: F32, F16, BF16\)/],
  ['offsets disagree with shape', () => variant('offsets', (d) => editHeader(d, (h) => { h['model.norm.weight'].shape = [31]; })), /data_offsets .* do not match shape \[31\]/],
  ['shape mismatch with config', () => variant('shape', (d) => writeFileSync(join(d, 'config.json'), JSON.stringify({ ...tinyConfig('llama'), intermediate_size: 64 }))), /shape mismatch for 'model\.layers\.0\.mlp\.gate_proj\.weight': config\.json implies \[64, 32\], the checkpoint has \[48, 32\]/],
  ['missing tensor', () => variant('qwen2-no-bias', (d) => writeFileSync(join(d, 'config.json'), JSON.stringify({ ...tinyConfig('llama'), model_type: 'qwen2' }))), /missing tensor 'model\.layers\.0\.self_attn\.q_proj\.bias'/],
  ['untied without lm_head', () => variant('untied', (d) => writeFileSync(join(d, 'config.json'), JSON.stringify({ ...tinyConfig('llama'), tie_word_embeddings: false }))), /missing tensor 'lm_head\.weight'/],
  ['bad head count', () => variant('heads', (d) => writeFileSync(join(d, 'config.json'), JSON.stringify({ ...tinyConfig('llama'), num_key_value_heads: 3 }))), /num_attention_heads 4 is not a multiple of num_key_value_heads 3/],
];

for (const [name, make, message] of cases) {
  test(`bad model folder: ${name}`, () => {
    const dir = make();
    assert.throws(() => Transformer.load(dir, { kernel: 'ts' }), (e: Error) => { assert.equal(e.name, 'ModelFileError'); assert.match(e.message, message); return true; });
  });
}

test('the worker-backed engine reports load errors with the same message (and no thread left behind)', async () => {
  const dir = variant('int8-engine', (d) => editHeader(d, (h) => { h['model.norm.weight'].dtype = 'I8'; }));
  await assert.rejects(EmbeddedEngine.load(dir), /unsupported dtype I8/);
});
