// --model takes a local folder or a Hugging Face model id ("HuggingFaceTB/SmolLM2-135M-Instruct").
// An id is looked up in the standard Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or
// ~/.cache/huggingface/hub), and downloaded into it when missing and the machine is online.
import { existsSync, mkdirSync, readFileSync, readdirSync, statSync, writeFileSync, renameSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export class ModelNotFound extends Error { override name = 'ModelNotFound'; }

const ID = /^[\w.-]+\/[\w.-]+$/;
const FILES = ['config.json', 'generation_config.json', 'tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'chat_template.jinja'];

export function hfCacheDir(): string {
  return process.env.HF_HUB_CACHE ?? join(process.env.HF_HOME ?? join(homedir(), '.cache', 'huggingface'), 'hub');
}

/** The cached snapshot folder of a Hugging Face model id, or null. */
export function cachedSnapshot(id: string): string | null {
  const repo = join(hfCacheDir(), `models--${id.replace('/', '--')}`);
  const ref = join(repo, 'refs', 'main');
  if (existsSync(ref)) {
    const snap = join(repo, 'snapshots', readFileSync(ref, 'utf8').trim());
    if (existsSync(join(snap, 'config.json'))) return snap;
  }
  const snaps = join(repo, 'snapshots');
  if (existsSync(snaps)) for (const s of readdirSync(snaps)) if (existsSync(join(snaps, s, 'config.json'))) return join(snaps, s);
  return null;
}

async function download(id: string, log: (l: string) => void): Promise<string> {
  const base = `https://huggingface.co/${id}/resolve/main`;
  const get = async (file: string, required: boolean): Promise<Buffer | null> => {
    const r = await fetch(`${base}/${file}`, { signal: AbortSignal.timeout(30_000) });
    if (r.status === 404 && !required) return null;
    if (!r.ok) throw new Error(`${file}: HTTP ${r.status}`);
    return Buffer.from(await r.arrayBuffer());
  };
  const snap = join(hfCacheDir(), `models--${id.replace('/', '--')}`, 'snapshots', 'main');
  mkdirSync(snap, { recursive: true });
  const save = (name: string, data: Buffer) => { const tmp = join(snap, `.${name}.part`); writeFileSync(tmp, data); renameSync(tmp, join(snap, name)); };
  for (const f of FILES) { const d = await get(f, f === 'config.json' || f === 'tokenizer.json'); if (d) save(f, d); }
  const index = await get('model.safetensors.index.json', false);
  const shards = index ? [...new Set(Object.values((JSON.parse(index.toString()) as { weight_map: Record<string, string> }).weight_map))] : ['model.safetensors'];
  if (index) save('model.safetensors.index.json', index);
  for (const s of shards) { log(`downloading ${id}/${s}…`); save(s, (await get(s, true))!); }
  mkdirSync(join(snap, '..', '..', 'refs'), { recursive: true });
  writeFileSync(join(snap, '..', '..', 'refs', 'main'), 'main');
  return snap;
}

/** A local model folder for `spec` (a folder, or a Hugging Face id: cache, else download). */
export async function resolveModel(spec: string, log: (l: string) => void = () => {}): Promise<string> {
  if (existsSync(spec) && statSync(spec).isDirectory()) return spec;
  if (!ID.test(spec)) throw new ModelNotFound(`'${spec}' is neither a model folder nor a Hugging Face model id (org/name)`);
  const cached = cachedSnapshot(spec);
  if (cached) return cached;
  const offlineHelp = `download it on a machine that is online (e.g. \`huggingface-cli download ${spec}\`) and pass --model /path/to/the/folder, or copy it into ${hfCacheDir()}`;
  if (process.env.HF_HUB_OFFLINE === '1' || process.env.OPENCLAW_RL_OFFLINE === '1') {
    throw new ModelNotFound(`'${spec}' is not in the Hugging Face cache and downloads are off (offline mode): ${offlineHelp}`);
  }
  try {
    return await download(spec, log);
  } catch (e) {
    throw new ModelNotFound(`could not download '${spec}' from huggingface.co (${(e as Error).message}); this machine may be offline: ${offlineHelp}`);
  }
}
