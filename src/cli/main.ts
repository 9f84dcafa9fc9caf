// The `openclaw-rl` command: finds the command named by the first words of argv in COMMANDS, prints help,
// runs it, and maps failures to exit codes (0 success, 1 runtime failure, 2 usage error). Commands are
// declared with defineCommand (src/cli/command.ts, which documents the pattern); add yours to COMMANDS.
import { readFileSync } from 'node:fs';
import { UsageError, EXIT, suggest, formatOptions, type Command } from './command.ts';
import { serveCommand } from './serve.ts';
import { serveTinkerCommand } from './serve-tinker.ts';
import { demoCommand } from './demo.ts';
import { statusCommand } from './status.ts';
import { openclawConfigCommand } from './openclaw-config.ts';
import { exportCommand } from './export.ts';
import { turnsCommand } from './turns.ts';
import { rollbackCommand } from './rollback.ts';
import { reportCommand } from './report.ts';
import { generateCommand, scoreCommand } from './generate.ts';
import { sftCommand, mergeCommand } from './sft.ts';
import { envServerCommand } from './env-server.ts';
import { benchChatModelCommand } from './bench-chat-model.ts';
import { benchJudgeCommand } from './bench-judge.ts';
import { benchHintCommand } from './bench-hint.ts';
import { agentTrainCommand, agentEvalCommand, benchAgentsCommand, benchGuiCommand } from './agent.ts';
import { benchEngineCommand, benchTrainCommand, benchGatewayCommand, benchPersonalizeCommand, benchDashboardCommand, benchTinkerCommand, benchOpenclawCommand, benchLoadCommand } from './bench.ts';

/** Every command, in the order `openclaw-rl --help` lists them. A name with a space is a member of a group. */
export const COMMANDS: readonly Command[] = [
  serveCommand, serveTinkerCommand, demoCommand, statusCommand, turnsCommand, rollbackCommand, reportCommand, openclawConfigCommand, exportCommand, generateCommand, scoreCommand,
  sftCommand, mergeCommand,
  benchEngineCommand, benchTrainCommand, benchGatewayCommand, benchDashboardCommand, benchPersonalizeCommand, benchChatModelCommand, benchJudgeCommand, benchHintCommand, benchAgentsCommand, benchGuiCommand, benchTinkerCommand, benchOpenclawCommand, benchLoadCommand,
  agentTrainCommand, agentEvalCommand, envServerCommand,
];

export function version(): string {
  return (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
}

function mainHelp(): string {
  return [
    `openclaw-rl ${version()} — serve a model behind an OpenAI-compatible API and train it from its conversations`,
    '',
    'Usage: openclaw-rl <command> [options]        openclaw-rl <command> --help   shows the options of one command',
    '',
    'Commands:',
    formatOptions(COMMANDS.filter((c) => !c.hidden).map((c) => [c.name, c.summary])),
    '',
    'Options: -h, --help (this help), -V, --version (the version).',
    'The model is a local Hugging Face folder (config.json, model.safetensors, tokenizer.json) or a model id;',
    '--model may be left out when OPENCLAW_RL_MODEL is set. OPENCLAW_RL_DEBUG=1 prints stack traces of failures.',
    'Exit codes: 0 success, 1 runtime failure, 2 usage error (unknown command or option, bad value).',
  ].join('\n');
}

function groupHelp(group: string, members: readonly Command[]): string {
  return [`Usage: openclaw-rl ${group} <what> [options]`, '', formatOptions(members.map((c) => [c.name, c.summary])),
    '', `openclaw-rl ${group} <what> --help shows the options of one.`].join('\n');
}

/** stdout closed by the reader (`openclaw-rl export | head -1`): stop quietly, as a Unix filter does. */
function quietOnClosedPipe(): void {
  if (process.stdout.listenerCount('error') > 0) return;
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(EXIT.ok);
    process.stderr.write(`openclaw-rl: cannot write to stdout: ${e.message}\n`);
    process.exit(EXIT.failure);
  });
}

export async function main(argv: string[]): Promise<number> {
  quietOnClosedPipe();
  const [first, second] = argv;
  if (first === undefined) { process.stderr.write(mainHelp() + '\n'); return EXIT.usage; }
  if (first === '--help' || first === '-h' || first === 'help') {
    const topic = first === 'help' && second ? COMMANDS.find((c) => c.name === argv.slice(1).join(' ')) : undefined;
    process.stdout.write((topic ? topic.help() : mainHelp()) + '\n');
    return EXIT.ok;
  }
  if (first === '--version' || first === '-V') { process.stdout.write(version() + '\n'); return EXIT.ok; }
  const command = COMMANDS.find((c) => c.name === `${first} ${second}`) ?? COMMANDS.find((c) => c.name === first);
  const members = COMMANDS.filter((c) => c.name.startsWith(`${first} `));
  if (!command) {
    if (members.length > 0) {
      const asked = second === undefined || second === '--help' || second === '-h';
      if (!asked) process.stderr.write(`openclaw-rl ${first}: unknown ${first} '${second}'${suggest(second, members.map((c) => c.name.slice(first.length + 1)), '')}\n\n`);
      (second === undefined || !asked ? process.stderr : process.stdout).write(groupHelp(first, members) + '\n');
      return second === '--help' || second === '-h' ? EXIT.ok : EXIT.usage;
    }
    const names = [...new Set(COMMANDS.map((c) => c.name.split(' ')[0]))];
    process.stderr.write(`openclaw-rl: unknown command '${first}'${suggest(first, names, '')}; openclaw-rl --help lists the commands\n`);
    return EXIT.usage;
  }
  const rest = argv.slice(command.name.split(' ').length);
  const end = rest.indexOf('--');
  if ((end < 0 ? rest : rest.slice(0, end)).some((a) => a === '--help' || a === '-h')) { process.stdout.write(command.help() + '\n'); return EXIT.ok; }
  try {
    const run = command.prepare(rest);
    const code = await run();
    return typeof code === 'number' ? code : EXIT.ok;
  } catch (e) {
    const err = e as Error & { code?: string };
    const usage = err instanceof UsageError || !!err.code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`openclaw-rl ${command.name}: ${err.message}\n`);
    if (process.env.OPENCLAW_RL_DEBUG) process.stderr.write(`${err.stack}\n`);
    // a failed command ends: nothing it left open (an engine thread, a socket) may keep the process alive
    setTimeout(() => process.exit(usage ? EXIT.usage : EXIT.failure), 500).unref();
    return usage ? EXIT.usage : EXIT.failure;
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
