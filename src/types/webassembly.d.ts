// The part of the WebAssembly JS API the engine uses. TypeScript ships these types only in its DOM
// libraries, which would bring browser globals into a Node project.
declare namespace WebAssembly {
  interface MemoryDescriptor { initial: number; maximum?: number; shared?: boolean }
  class Memory {
    constructor(descriptor: MemoryDescriptor);
    readonly buffer: ArrayBuffer | SharedArrayBuffer;
    grow(delta: number): number;
  }
  type ImportValue = Memory | ((...args: never[]) => unknown) | number;
  type Imports = Record<string, Record<string, ImportValue>>;
  type Exports = Record<string, unknown>;
  interface ModuleImportDescriptor { module: string; name: string; kind: string }
  class Module {
    constructor(bytes: ArrayBufferView | ArrayBuffer);
    static imports(module: Module): ModuleImportDescriptor[];
    static exports(module: Module): { name: string; kind: string }[];
  }
  class Instance {
    constructor(module: Module, imports?: Imports);
    readonly exports: Exports;
  }
}
