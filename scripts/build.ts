// `npm run build`: compile src/ to dist/ and copy the non-TypeScript assets beside it.
import { execFileSync } from 'node:child_process';
import { cpSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
cpSync(join(root, 'src/engine/embedded/kernels/kernels.wasm'), join(root, 'dist/engine/embedded/kernels/kernels.wasm'));
cpSync(join(root, 'src/dashboard/static'), join(root, 'dist/dashboard/static'), { recursive: true });
// the OpenClaw plugin is its own package, compiled to plugins/openclaw/dist
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'plugins/openclaw/tsconfig.json')], { stdio: 'inherit' });
console.log('built dist/ and plugins/openclaw/dist/');
