// --model takes a local folder or a Hugging Face model id ("HuggingFaceTB/SmolLM2-135M-Instruct").
// An id is looked up in the standard Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub or
// ~/.cache/huggingface/hub), and downloaded into it when missing and the machine is online
// (hub-download.ts); HF_HUB_OFFLINE=1 never goes to the network.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { snapshotDownload, HubError, hubEndpoint, repoFolder } from './hub-download.ts';

export class ModelNotFound extends Error { override name = 'ModelNotFound'; }

const ID = /^[\w.-]+\/[\w.-]+$/;

export function hfCacheDir(): string {
  return process.env.HF_HUB_CACHE ?? join(process.env.HF_HOME ?? join(homedir(), '.cache', 'huggingface'), 'hub');
}

/** Whether a snapshot folder holds a whole model: config, tokenizer and every weights file. */
function complete(snap: string): boolean {
  if (!existsSync(join(snap, 'config.json')) || !existsSync(join(snap, 'tokenizer.json'))) return false;
  if (existsSync(join(snap, 'model.safetensors'))) return true;
  try {
    const index = JSON.parse(readFileSync(join(snap, 'model.safetensors.index.json'), 'utf8')) as { weight_map: Record<string, string> };
    return Object.values(index.weight_map).every((f) => existsSync(join(snap, f)));
  } catch {
    return false;
  }
}

/** The cached snapshot folder of a Hugging Face model id (refs/main's commit first), or null when none is complete. */
export function cachedSnapshot(id: string): string | null {
  const repo = repoFolder(hfCacheDir(), id);
  const ref = join(repo, 'refs', 'main');
  if (existsSync(ref)) {
    const snap = join(repo, 'snapshots', readFileSync(ref, 'utf8').trim());
    if (complete(snap)) return snap;
  }
  const snaps = join(repo, 'snapshots');
  if (existsSync(snaps)) for (const s of readdirSync(snaps)) if (complete(join(snaps, s))) return join(snaps, s);
  return null;
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
    return await snapshotDownload(spec, { cacheDir: hfCacheDir(), log });
  } catch (e) {
    if (e instanceof HubError) throw new ModelNotFound(`could not download '${spec}': ${e.message}`);
    const err = e as Error & { cause?: Error };
    throw new ModelNotFound(`could not download '${spec}' from ${hubEndpoint()} (${err.cause?.message ?? err.message}); this machine may be offline: ${offlineHelp}`);
  }
}
