// The compute kernels of the embedded engine, compiled to WebAssembly SIMD by AssemblyScript
// (scripts/build-wasm.ts; this is the entry file). Every pointer is a byte offset into the shared
// memory that the engine's arena owns; strides are in floats. Worker threads call the same kernel on
// disjoint ranges of the output (see src/engine/embedded/kernels/wasm-pool.ts).

export { gemm_nt, gemm_nn, gemm_tn } from './gemm';
export { gemm_packed, gemm_packed_t, gemm_packed_bf16, gemm_packed_t_bf16, gemm_packed_i8, gemm_packed_t_i8 } from './packed';
export { attention, attention_backward } from './attention';
export { rows_lse, rows_softmax_grad, swiglu, swiglu_backward } from './rows';
