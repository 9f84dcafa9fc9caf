// The `openclaw-rl` command.
import { generateCommand, scoreCommand } from './generate.ts';
import { benchCommand } from './bench.ts';
import { serveCommand } from './serve.ts';
import { exportCommand } from './export.ts';
import { demoCommand } from './demo.ts';
import { openclawConfigCommand } from './openclaw-config.ts';
import { statusCommand } from './status.ts';
import { sftCommand, mergeCommand } from './sft.ts';
import { UsageError } from './args.ts';

const HELP = `openclaw-rl — serve a model behind an OpenAI-compatible API and train it from its conversations

Usage:
  openclaw-rl serve    --model DIR [--host 127.0.0.1] [--port 30000] [--api-key KEY] [--data-dir .openclaw-rl]
                       [--served-model-name ID] [--max-concurrent 16] [--session-idle-seconds 1800]
                       [--judge lexical|self|llm|none] [--judge-url URL --judge-model ID] [--judge-votes 3]
                       [--method binary|opd|combine] [--batch-size 8] [--learning-rate 1e-3] [--no-train]
  openclaw-rl demo     [--model DIR|ID] [--persona dog-lover] [--conversations 128]
  openclaw-rl status   [--url http://127.0.0.1:30000] [--json]
  openclaw-rl openclaw-config [--base-url URL] [--model-id ID] [--api-key K] [--with-plugin]
  openclaw-rl export   [--data-dir .openclaw-rl] [--from ISO] [--to ISO] [--out FILE] [--no-redact]
  openclaw-rl generate --model DIR (--prompt TEXT | --messages JSON) [--max-tokens N] [--temperature T]
                       [--top-p P] [--top-k K] [--seed S] [--stop STR]... [--json]
  openclaw-rl score    --model DIR (--prompt TEXT --response TEXT | --prompt-ids 1,2 --response-ids 3,4)
                       [--temperature T] [--json]
  openclaw-rl sft      --model DIR --data FILE.jsonl --out DIR [--full | --lora-rank 16 --lora-alpha 32]
                       [--epochs 1] [--learning-rate 1e-3] [--batch-tokens 4096] [--eval-fraction 0.05]
                       [--eval-every N] [--seed 1] [--resume] [--checkpoint-dir DIR] [--checkpoint-every 50]
  openclaw-rl merge    --model DIR --adapter DIR --out DIR
  openclaw-rl bench engine [--model DIR | --shape 15m|135m|0.6b] [--kernel wasm|ts] [--threads N] [--json]
  openclaw-rl bench train  [--model DIR | --shape 15m|135m|0.6b] [--rank 16] [--seq 256] [--batch 4] [--json]
  openclaw-rl bench gateway --model DIR [--requests 40] [--max-tokens 16] [--concurrency 16] [--json]
  openclaw-rl bench personalize --model DIR (--persona NAME | --persona-file P) [--method binary|opd|combine | --compare]
                       [--conversations 64] [--judge lexical|self|llm] [--users 1] [--seed 1] [--out DIR] [--json]

Common options: --kernel wasm|ts (matrix kernel, default wasm), --threads N (default: all cores),
--adapter DIR (generate, score: a PEFT LoRA adapter folder, used on top of the model).
The model is a local Hugging Face folder (config.json, model.safetensors, tokenizer.json);
--model may be left out when OPENCLAW_RL_MODEL is set.`;

const COMMANDS: Record<string, (argv: string[]) => Promise<void>> = {
  serve: serveCommand,
  export: exportCommand,
  demo: demoCommand,
  'openclaw-config': openclawConfigCommand,
  status: statusCommand,
  generate: generateCommand,
  score: scoreCommand,
  bench: benchCommand,
  sft: sftCommand,
  merge: mergeCommand,
};

export async function main(argv: string[]): Promise<number> {
  const [cmd, ...rest] = argv;
  if (!cmd || cmd === 'help' || cmd === '--help' || cmd === '-h') { process.stdout.write(HELP + '\n'); return cmd ? 0 : 2; }
  const run = COMMANDS[cmd];
  if (!run) { process.stderr.write(`openclaw-rl: unknown command '${cmd}'\n\n${HELP}\n`); return 2; }
  try {
    await run(rest);
    return 0;
  } catch (e) {
    const err = e as Error & { code?: string };
    const usage = err instanceof UsageError || err.code?.startsWith('ERR_PARSE_ARGS');
    process.stderr.write(`openclaw-rl ${cmd}: ${err.message}\n`);
    if (process.env.OPENCLAW_RL_DEBUG) process.stderr.write(`${err.stack}\n`);
    return usage ? 2 : 1;
  }
}

if (import.meta.main) process.exitCode = await main(process.argv.slice(2));
