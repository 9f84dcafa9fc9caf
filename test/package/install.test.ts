// The package as a user installs it: `npm pack` (prepack builds dist/ and the plugin), then
// `npm install -g` of the tarball into a temporary prefix, then the installed command itself.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { STORIES, tempDir } from '../helpers/models.ts';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
// this Node first on PATH: npm's scripts and the installed command's `#!/usr/bin/env node` use it
const env = { ...process.env, PATH: `${dirname(process.execPath)}:${process.env.PATH}`, OPENCLAW_RL_MODEL: '' };
const npm = (args: string[], cwd: string) => run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env, maxBuffer: 64 * 2 ** 20 });

test('npm pack + npm install -g of the tarball: --version, serve --help, a short demo, openclaw-config --with-plugin', async () => {
  const t = tempDir('ocrl-pack-');
  try {
    await npm(['pack', '--pack-destination', t.dir], ROOT);
    const tarball = readdirSync(t.dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote no tarball');
    const prefix = join(t.dir, 'prefix');
    await npm(['install', '-g', '--prefix', prefix, '--prefer-offline', join(t.dir, tarball)], t.dir);
    const bin = join(prefix, 'bin', 'openclaw-rl');
    const installed = join(prefix, 'lib', 'node_modules', 'openclaw-rl');
    assert.ok(existsSync(join(installed, 'dist', 'cli', 'main.js')), 'dist/ is in the package');
    const cli = (...args: string[]) => run(bin, args, { env, cwd: t.dir });

    const version = await cli('--version');
    assert.match(version.stdout, /^\d+\.\d+\.\d+/);
    const help = await cli('serve', '--help');
    assert.match(help.stdout, /^Usage: openclaw-rl serve \[options\]/);
    assert.match(help.stdout, /--port PORT/);

    const demo = await cli('demo', '--model', STORIES, '--conversations', '4', '--eval-every', '2', '--eval-k', '2', '--batch-size', '2', '--out', join(t.dir, 'demo'));
    assert.match(demo.stderr, /dog-lover: satisfaction \d+% → \d+%, satisfied-and-fluent \d+% → \d+%, KL to base [\d.]+ after 4 conversations/);
    assert.ok(existsSync(join(t.dir, 'demo', 'curve.json')));

    // no server to ask: the model serve would be given, by the environment as `npm start` does
    const config = await run(bin, ['openclaw-config', '--with-plugin', '--base-url', 'http://127.0.0.1:9/v1'], { env: { ...env, OPENCLAW_RL_MODEL: STORIES }, cwd: t.dir });
    assert.equal(JSON.parse(config.stdout).models.providers['openclaw-rl'].models[0].contextWindow, 512);
    const pluginDir: string = JSON.parse(config.stdout).plugins.load.paths[0];
    assert.ok(pluginDir.startsWith(installed), `${pluginDir} is inside the installed package`);
    for (const f of ['openclaw.plugin.json', 'package.json', 'dist/index.js']) assert.ok(existsSync(join(pluginDir, f)), `plugin file ${f}`);
  } finally {
    t.cleanup();
  }
});
