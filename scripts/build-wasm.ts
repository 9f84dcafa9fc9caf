// Rebuilds src/engine/embedded/kernels/kernels.wasm from assembly/ (entry kernels.ts) with the AssemblyScript
// compiler from npm (no other toolchain). The output is committed; `npm test` checks it is current.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const WASM_OUT = join(root, 'src/engine/embedded/kernels/kernels.wasm');
export const ASC_ARGS = [
  'assembly/kernels.ts', '--runtime', 'stub', '-O3', '--noAssert', '--enable', 'simd', '--enable', 'relaxed-simd',
  '--enable', 'threads', '--importMemory', '--sharedMemory', '--initialMemory', '1', '--maximumMemory', '65536',
];

export function buildWasm(outFile: string): void {
  execFileSync(process.execPath, [join(root, 'node_modules/assemblyscript/bin/asc.js'), ...ASC_ARGS, '-o', outFile], { cwd: root, stdio: 'inherit' });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  buildWasm(WASM_OUT);
  console.log(`wrote ${WASM_OUT}`);
}
