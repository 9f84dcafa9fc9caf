// Sandboxes for agent environments: every command runs under bubblewrap (new user, pid, network,
// IPC and UTS namespaces; a read-only /usr; the episode's working tree at /work and a private /tmp
// beside it, nothing else of the host visible), with rlimits set by prlimit: address space (memory),
// CPU seconds, processes, file size and open files, plus a wall-clock timeout that kills the whole
// pid namespace. When we run as root (containers), the command also drops to an unprivileged uid of
// its own first (setpriv): root is exempt from the process limit, and a fork bomb must hit it.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, chownSync, chmodSync, existsSync, lstatSync, readlinkSync, linkSync, copyFileSync, renameSync, writeFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { randomInt } from 'node:crypto';
import { constants } from 'node:os';

export interface SandboxLimits {
  /** wall-clock limit per command */
  wallMs: number;
  cpuSeconds: number;
  /** address-space limit per process */
  memoryBytes: number;
  /** processes of the sandbox's uid (a fork bomb stops here) */
  processes: number;
  /** largest file a process may write */
  fileBytes: number;
  openFiles: number;
  /** stdout and stderr are each cut to this many bytes (the rest is drained and dropped) */
  outputBytes: number;
}

export const SANDBOX_DEFAULTS: SandboxLimits = {
  wallMs: 10_000, cpuSeconds: 10, memoryBytes: 512 * 2 ** 20, processes: 64, fileBytes: 16 * 2 ** 20, openFiles: 256, outputBytes: 16 * 1024,
};

export interface RunResult {
  stdout: string;
  stderr: string;
  /** null when killed by a signal */
  exitCode: number | null;
  signal: string | null;
  /** killed at the wall-clock limit */
  timedOut: boolean;
  truncated: boolean;
  durationMs: number;
}

export type SandboxSupport = { ok: true } | { ok: false; reason: string };

let support: SandboxSupport | null = null;

/** Whether this machine can run sandboxes (bubblewrap installed, namespaces allowed); cached. */
export function sandboxSupport(): SandboxSupport {
  if (support) return support;
  const which = spawnSync('bwrap', ['--version'], { encoding: 'utf8' });
  if (which.error || which.status !== 0) {
    support = { ok: false, reason: 'bubblewrap (bwrap) is not installed: apt-get install bubblewrap' };
    return support;
  }
  const probe = spawnSync('bwrap', [...systemBinds(), '--unshare-all', '--die-with-parent', '--proc', '/proc', '--dev', '/dev', 'true'], { encoding: 'utf8', timeout: 10_000 });
  support = probe.status === 0 ? { ok: true } : { ok: false, reason: `the kernel refuses bubblewrap's namespaces: ${(probe.stderr || probe.error?.message || '').trim()}` };
  return support;
}

/** /usr read-only, and /bin, /lib… as the host has them (symlinks into /usr on merged-/usr systems). */
function systemBinds(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const d of ['/bin', '/sbin', '/lib', '/lib64', '/lib32']) {
    if (!existsSync(d)) continue;
    const st = lstatSync(d);
    if (st.isSymbolicLink()) args.push('--symlink', readlinkSync(d), d);
    else if (st.isDirectory()) args.push('--ro-bind', d, d);
  }
  if (existsSync('/etc/alternatives')) args.push('--ro-bind', '/etc/alternatives', '/etc/alternatives');
  if (existsSync('/etc/ld.so.cache')) args.push('--ro-bind', '/etc/ld.so.cache', '/etc/ld.so.cache');
  return args;
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Whether every folder from the root down to dir lets other uids pass through (o+x). */
export function passableByOthers(dir: string): boolean {
  for (let p = resolve(dir); ; p = dirname(p)) {
    try { if (!(statSync(p).mode & 0o001)) return false; } catch { return false; }
    if (p === dirname(p)) return true;
  }
}

/**
 * The folder sandboxes and the shared node binary live in: the temporary folder, or /tmp where that is private. Run as
 * root, commands drop to a uid of their own, which must pass through every folder above its working tree; a TMPDIR
 * of mode 0700 (mktemp -d, /run/user/N) would leave it at "Permission denied" on its own folder.
 */
export function sandboxTempRoot(rootUser = isRoot(), tmp = tmpdir()): string {
  if (!rootUser || passableByOthers(tmp)) return tmp;
  if (passableByOthers('/tmp')) return '/tmp';
  throw new Error(`sandbox unavailable: the temporary folder ${tmp} is private (a sandbox's uid cannot pass through it) and /tmp is too; set TMPDIR to a folder of mode 0755 or 1777`);
}

/**
 * The running Node.js binary, at a path every sandbox uid may read: a hard link (or copy) in a shared
 * temporary folder. The host's node may live under a private home (/root), which an unprivileged
 * sandbox cannot bind from; and /usr/bin/node, when there is one, may be older than the Node.js the
 * project runs on. Made once per node version.
 */
export function sandboxNodeBinary(): string {
  const dir = join(sandboxTempRoot(), `openclaw-rl-node-${process.version}`);
  const bin = join(dir, 'node');
  if (existsSync(bin)) return bin;
  mkdirSync(dir, { recursive: true, mode: 0o755 });
  chmodSync(dir, 0o755);
  const part = `${bin}.${process.pid}.part`;
  try { linkSync(process.execPath, part); } catch { copyFileSync(process.execPath, part); chmodSync(part, 0o755); }
  renameSync(part, bin);
  return bin;
}

/** Where the node binary appears inside a sandbox that asked for it. */
export const SANDBOX_NODE_DIR = '/opt/node/bin';

export interface SandboxOptions {
  /** make the running Node.js available inside as `node` (at /opt/node/bin, first on PATH) */
  node?: boolean;
  /** extra environment variables of every command */
  env?: Record<string, string>;
}

/** One episode's sandbox: a temporary working tree, and commands run in it one at a time or in parallel. */
export class Sandbox {
  readonly root: string;
  /** the working tree (/work inside) */
  readonly dir: string;
  readonly limits: SandboxLimits;
  /** the uid commands run as when we are root; null otherwise */
  readonly uid: number | null;
  private destroyed = false;
  /** a command has run: from then on the tree is the agent's, and only commands inside may write it */
  private used = false;
  private readonly nodeBinary: string | null;
  private readonly env: Record<string, string>;

  constructor(limits: Partial<SandboxLimits> = {}, options: SandboxOptions = {}) {
    const s = sandboxSupport();
    if (!s.ok) throw new Error(`sandbox unavailable: ${s.reason}`);
    this.limits = { ...SANDBOX_DEFAULTS, ...limits };
    this.nodeBinary = options.node ? sandboxNodeBinary() : null;
    this.env = options.env ?? {};
    this.root = mkdtempSync(join(sandboxTempRoot(), 'openclaw-rl-sandbox-'));
    this.dir = join(this.root, 'work');
    mkdirSync(this.dir);
    mkdirSync(join(this.root, 'tmp'));
    // a uid of its own per sandbox, so one sandbox's processes never count against another's limit
    this.uid = isRoot() ? randomInt(1_000_000, 2_000_000_000) : null;
    if (this.uid !== null) {
      chmodSync(this.root, 0o711); // the sandbox uid may pass through to its two folders, nothing more
      for (const p of [this.dir, join(this.root, 'tmp')]) chownSync(p, this.uid, this.uid);
    }
  }

  private argv(program: string[]): string[] {
    const l = this.limits;
    const limits = [`--as=${l.memoryBytes}`, `--cpu=${l.cpuSeconds}`, `--nproc=${l.processes}`, `--fsize=${l.fileBytes}`, `--nofile=${l.openFiles}`, '--core=0'];
    const bwrap = [
      'bwrap', ...systemBinds(), '--unshare-all', '--die-with-parent', '--new-session', '--info-fd', '3',
      '--proc', '/proc', '--dev', '/dev', '--bind', join(this.root, 'tmp'), '/tmp', '--bind', this.dir, '/work', '--chdir', '/work',
      ...(this.nodeBinary ? ['--ro-bind', this.nodeBinary, `${SANDBOX_NODE_DIR}/node`] : []),
      '--clearenv', '--setenv', 'PATH', `${this.nodeBinary ? `${SANDBOX_NODE_DIR}:` : ''}/usr/local/bin:/usr/bin:/bin`, '--setenv', 'HOME', '/work', '--setenv', 'LANG', 'C.UTF-8', '--setenv', 'TMPDIR', '/tmp',
      ...Object.entries(this.env).flatMap(([k, v]) => ['--setenv', k, v]),
      '--', ...program,
    ];
    const withLimits = ['prlimit', ...limits, '--', ...bwrap];
    return this.uid === null ? withLimits : ['setpriv', `--reuid=${this.uid}`, `--regid=${this.uid}`, '--clear-groups', '--inh-caps=-all', ...withLimits];
  }

  /** Run a program (argv) inside the sandbox; never throws for what the program does. */
  exec(program: string[], opts: { stdin?: string; wallMs?: number } = {}): Promise<RunResult> {
    if (this.destroyed) return Promise.reject(new Error('the sandbox was destroyed'));
    this.used = true;
    const [cmd, ...args] = this.argv(program);
    const t0 = performance.now();
    const cap = this.limits.outputBytes;
    return new Promise<RunResult>((resolve) => {
      const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe', 'pipe'], detached: true });
      // bwrap reports the pid of the sandbox's init on fd 3; killing that init kills the whole pid
      // namespace, and bwrap itself then exits normally (and is reaped by us: no zombie left behind)
      let initPid: number | null = null;
      let info = '';
      (child.stdio[3] as NodeJS.ReadableStream).on('data', (c: Buffer) => {
        info += c.toString('utf8');
        const m = /"child-pid":\s*(\d+)/.exec(info);
        if (m) initPid = Number(m[1]);
      });
      const out: Buffer[] = [], err: Buffer[] = [];
      let outN = 0, errN = 0, truncated = false, timedOut = false;
      const take = (buf: Buffer[], n: number, c: Buffer): number => {
        if (n < cap) buf.push(c.subarray(0, cap - n));
        if (n + c.length > cap) truncated = true;
        return n + c.length;
      };
      child.stdout.on('data', (c: Buffer) => { outN = take(out, outN, c); });
      child.stderr.on('data', (c: Buffer) => { errN = take(err, errN, c); });
      child.stdin.on('error', () => {}); // the program may exit without reading its input
      child.stdin.end(opts.stdin ?? '');
      const killPid = (pid: number) => { try { process.kill(pid, 'SIGKILL'); } catch { /* already gone */ } };
      let backstop: NodeJS.Timeout | undefined;
      const timer = setTimeout(() => {
        timedOut = true;
        if (initPid !== null) killPid(initPid);
        // bwrap not started yet, or not exiting: kill its process group (setpriv → prlimit → bwrap)
        backstop = setTimeout(() => killPid(-child.pid!), initPid !== null ? 2000 : 0);
      }, opts.wallMs ?? this.limits.wallMs);
      child.on('error', (e) => { clearTimeout(timer); clearTimeout(backstop); resolve({ stdout: '', stderr: `sandbox: ${e.message}`, exitCode: null, signal: null, timedOut: false, truncated: false, durationMs: performance.now() - t0 }); });
      child.on('close', (code, signal) => {
        clearTimeout(timer);
        clearTimeout(backstop);
        resolve({
          stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), exitCode: code, signal,
          timedOut, truncated, durationMs: performance.now() - t0,
        });
      });
    });
  }

  /**
   * Fill the working tree from the host before any command has run (no symlink can be planted in a
   * tree nothing has touched yet). Paths must be relative and stay inside; much faster than writeFile.
   */
  seed(files: Record<string, string>): void {
    if (this.used || this.destroyed) throw new Error('seed() only fills a fresh sandbox');
    for (const [rel, content] of Object.entries(files)) {
      const parts = rel.split('/').filter((p) => p !== '' && p !== '.');
      if (rel.startsWith('/') || parts.length === 0 || parts.includes('..')) throw new Error(`seed: path '${rel}' must be relative and stay inside the tree`);
      const path = join(this.dir, ...parts);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, content);
      // hand the file and its folders to the sandbox's uid
      if (this.uid !== null) for (let p = path; p !== this.dir; p = dirname(p)) chownSync(p, this.uid, this.uid);
    }
  }

  /** Run a shell command line in the working tree. */
  run(command: string, opts: { wallMs?: number } = {}): Promise<RunResult> { return this.exec(['/bin/sh', '-c', command], opts); }

  /**
   * Write a file inside the sandbox (by a command in it, so a symlink the agent planted cannot
   * point the write outside the working tree). Paths are relative to /work or absolute inside.
   */
  async writeFile(path: string, content: string): Promise<RunResult> {
    return this.exec(['/bin/sh', '-c', 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', 'write_file', path], { stdin: content });
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    rmSync(this.root, { recursive: true, force: true });
  }
}

/** The observation text of a command's result, as an agent reads it. */
export function describeRun(r: RunResult, limits: SandboxLimits, maxChars = 2000): string {
  const parts: string[] = [];
  if (r.stdout) parts.push(r.stdout);
  if (r.stderr) parts.push(r.stderr);
  let text = parts.join(r.stdout.endsWith('\n') || !r.stdout ? '' : '\n');
  if (text.length > maxChars) text = `${text.slice(0, maxChars)}\n… (output cut at ${maxChars} characters)`;
  else if (r.truncated) text += `\n… (output cut at ${limits.outputBytes} bytes)`;
  // bwrap reports a child killed by signal N as exit code 128 + N
  const signal = r.signal ?? (r.exitCode !== null && r.exitCode > 128 ? signalName(r.exitCode - 128) : null);
  const status = r.timedOut ? `killed: wall-clock limit of ${limits.wallMs / 1000} s`
    : (signal === 'SIGXCPU' || signal === 'SIGKILL') && r.durationMs >= limits.cpuSeconds * 900 ? `killed: CPU limit of ${limits.cpuSeconds} s`
    : signal ? `killed by ${signal}` : `exit code ${r.exitCode}`;
  return `${text}${text && !text.endsWith('\n') ? '\n' : ''}[${status}]`;
}

function signalName(n: number): string | null {
  return Object.entries(constants.signals).find(([, v]) => v === n)?.[0] ?? null;
}
