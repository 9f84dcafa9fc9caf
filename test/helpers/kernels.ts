// The fast kernel backends a test should run on here: WebAssembly always, and native where its addon
// was built for this machine (a clone without a C compiler runs the WebAssembly ones only).
import { loadNativeAddon } from '../../src/engine/embedded/kernels/native.ts';

export const FAST_KERNELS: readonly ('wasm' | 'native')[] = loadNativeAddon().addon ? ['wasm', 'native'] : ['wasm'];
