// Structured logs on stderr, with levels (debug, info, warn, error): JSON lines for log collectors
// (`--log-format json`: pino's format, one object per line with level, time, msg and fields) or text lines
// for people (the default: time, level, component and message, then the fields as key=value).
import { pino, type Logger as Pino } from 'pino';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export const LOG_FORMATS = ['text', 'json'] as const;

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  /** a logger whose lines carry `bindings` (e.g. {component: 'judge'}) */
  child(bindings: Record<string, unknown>): Logger;
}

const NAMES: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const value = (v: unknown) => (typeof v === 'string' && /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v));

/** One of pino's JSON lines as a text line: `2026-11-23T07:10:00.123Z WARN  judge: message key=value`. */
export function formatText(line: string): string {
  let o: Record<string, unknown>;
  try { o = JSON.parse(line); } catch { return line; }
  const { level, time, msg, component, pid: _pid, hostname: _host, ...fields } = o;
  const when = typeof time === 'number' ? new Date(time).toISOString() : '';
  const extra = Object.entries(fields).map(([k, v]) => ` ${k}=${value(v)}`).join('');
  return `${when} ${(NAMES[level as number] ?? String(level)).padEnd(5)} ${component ? `${component}: ` : ''}${msg ?? ''}${extra}\n`;
}

function wrap(p: Pino): Logger {
  return {
    debug: (msg, fields) => p.debug(fields ?? {}, msg),
    info: (msg, fields) => p.info(fields ?? {}, msg),
    warn: (msg, fields) => p.warn(fields ?? {}, msg),
    error: (msg, fields) => p.error(fields ?? {}, msg),
    child: (bindings) => wrap(p.child(bindings)),
  };
}

/** A logger writing to `out` (stderr by default), synchronously so nothing is lost when the process exits. */
export function createLogger(o: { level?: LogLevel; format?: LogFormat; out?: { write(s: string): unknown } } = {}): Logger {
  const out = o.out ?? process.stderr;
  const format = o.format ?? 'text';
  const stream = { write: (line: string) => { out.write(format === 'json' ? line : formatText(line)); } };
  return wrap(pino({ level: o.level ?? 'info', base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.epochTime }, stream));
}

/** A logger that drops everything (library defaults, tests). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {}, child() { return silentLogger; } };
