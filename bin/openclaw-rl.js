#!/usr/bin/env node
// Entry point: refuse old Node versions with a clear message, then run the CLI — from the
// TypeScript sources in a checkout (Node strips the types), from the compiled dist/ when installed
// as a package (Node does not strip types under node_modules).
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  process.stderr.write(`openclaw-rl needs Node.js 24 or newer; this is Node.js ${process.versions.node}.\n`);
  process.exit(1);
}
const { existsSync } = await import('node:fs');
const src = new URL('../src/cli/main.ts', import.meta.url);
const useSrc = existsSync(src) && !src.pathname.includes('/node_modules/');
const { main } = await import(useSrc ? src.href : new URL('../dist/cli/main.js', import.meta.url).href);
process.exitCode = await main(process.argv.slice(2));
