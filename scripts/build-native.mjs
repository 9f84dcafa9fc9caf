// Builds the native kernel addon (native/*.c → build/native/kernels.node) with the machine's C
// compiler: run by `npm install` (the install script) and `npm run build`. Plain JavaScript, not
// TypeScript, because Node does not strip types under node_modules (an installed package).
// It never fails the install: without a compiler, Node's headers or an x86-64 CPU it says why and
// the engine uses its WebAssembly kernels. CC picks the compiler (default cc); OPENCLAW_RL_NATIVE=0
// skips the build.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const NATIVE_OUT = join(root, 'build/native/kernels.node');
/** `--out FILE` builds somewhere else (tests); the default is where the engine looks (native.ts). */
const outArg = process.argv.indexOf('--out');
const OUT = outArg > 0 ? process.argv[outArg + 1] : NATIVE_OUT;

/** Node's own C headers: beside the running node (official builds), or the node-api-headers package. */
function headerDir() {
  const candidates = [join(dirname(process.execPath), '../include/node'), join(root, 'node_modules/node-api-headers/include')];
  return candidates.find((d) => existsSync(join(d, 'node_api.h')));
}

/** Build the addon; returns null on success, else the reason it was not built. */
export function buildNative(out = OUT) {
  if (process.env.OPENCLAW_RL_NATIVE === '0') return 'OPENCLAW_RL_NATIVE=0';
  if (process.arch !== 'x64') return `no native kernels for ${process.arch} (x86-64 only)`;
  const include = headerDir();
  if (!include) return "Node's C headers (node_api.h) were not found";
  const cc = process.env.CC || 'cc';
  const src = join(root, 'native');
  const tmp = join(dirname(out), `kernels-${process.pid}.node`);
  mkdirSync(dirname(out), { recursive: true });
  const common = ['-O3', '-fPIC', '-ffp-contract=off', '-fno-strict-aliasing', '-Wall', '-Wno-unused-function'];
  // each instruction-set build is its own object file with its own -m flags; kernels.c picks one at run time
  const units = [
    ['kernels.c', []],
    ['gemm-avx2.c', ['-mavx2', '-mfma']],
    ['attention-avx2.c', ['-mavx2', '-mfma']],
    ['attention-f32-avx2.c', ['-mavx2', '-mfma']],
    ['gemm-avx512.c', ['-mavx512f', '-mavx512vl', '-mavx512bw', '-mavx512dq', '-mfma']],
  ];
  const objects = units.map(([file]) => join(dirname(out), `${file}.${process.pid}.o`));
  const run = (args) => execFileSync(cc, args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000 });
  try {
    units.forEach(([file, flags], i) => run([...common, ...flags, `-I${include}`, '-c', join(src, file), '-o', objects[i]]));
    run(['-shared', '-pthread', '-o', tmp, ...objects]);
  } catch (e) {
    rmSync(tmp, { force: true });
    for (const o of objects) rmSync(o, { force: true });
    const err = /** @type {{ code?: string, stderr?: Buffer, message: string }} */ (e);
    return err.code === 'ENOENT' ? `no C compiler ('${cc}' not found)` : `the C compiler failed: ${(err.stderr?.toString() || err.message).trim().split('\n').slice(0, 5).join(' | ')}`;
  }
  for (const o of objects) rmSync(o, { force: true });
  renameSync(tmp, out);
  return null;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const why = buildNative();
  if (why) {
    rmSync(OUT, { force: true }); // never leave a stale addon that no longer matches the sources
    console.log(`openclaw-rl: native kernels not built (${why}); the engine will use its WebAssembly kernels`);
  } else console.log(`openclaw-rl: built native kernels (${OUT})`);
}
