// Tokenizer and chat template of a model folder: `tokenizer.json` through @huggingface/tokenizers,
// the Jinja chat template of `tokenizer_config.json` (or `chat_template.jinja`) through
// @huggingface/jinja, rendered with the same variables as transformers' apply_chat_template.
import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { Template } from '@huggingface/jinja';
import { ModelFileError } from './safetensors.ts';
import type { Tokenizer as ChatTokenizerInterface, ChatMessage, RenderOptions } from '../types.ts';

export type { ToolCall, ContentPart, ChatMessage, ToolSpec, RenderOptions } from '../types.ts';

/**
 * Plain-text fallback for models without a chat template (base models such as stories260K):
 * the messages' text contents joined by a newline, roles dropped, nothing added for the
 * generation prompt. A base model then simply continues the conversation's text.
 */
export const PLAIN_TEXT_FALLBACK = 'plain-text: message contents joined by "\\n", BOS prepended when the tokenizer adds one';

export class ChatTokenizer implements ChatTokenizerInterface {
  readonly tokenizer: Tokenizer;
  readonly chatTemplate: string | null;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  readonly addBosToken: boolean;
  readonly specialTokens: Record<string, string>;
  private readonly template: Template | null;
  private readonly specialIds: Set<number>;

  constructor(tokenizerJson: object, config: Record<string, unknown>, chatTemplate: string | null) {
    this.tokenizer = new Tokenizer(tokenizerJson, config);
    const tokenText = (v: unknown): string | null => (typeof v === 'string' ? v : v && typeof v === 'object' && typeof (v as { content?: unknown }).content === 'string' ? (v as { content: string }).content : null);
    this.bosToken = tokenText(config.bos_token);
    this.eosToken = tokenText(config.eos_token);
    this.addBosToken = config.add_bos_token === true;
    this.specialTokens = {};
    for (const key of ['bos_token', 'eos_token', 'unk_token', 'pad_token']) {
      const t = tokenText(config[key]);
      if (t !== null) this.specialTokens[key] = t;
    }
    this.chatTemplate = chatTemplate;
    this.template = chatTemplate ? new Template(chatTemplate) : null;
    this.specialIds = new Set([...this.tokenizer.get_added_tokens_decoder()].filter(([, t]) => t.special).map(([id]) => id));
  }

  static load(dir: string): ChatTokenizer {
    const tjPath = join(dir, 'tokenizer.json');
    if (!existsSync(tjPath)) throw new ModelFileError(`tokenizer.json not found in ${dir}`);
    const readJson = (p: string) => {
      try { return JSON.parse(readFileSync(p, 'utf8')); } catch (e) { throw new ModelFileError(`${p} is not valid JSON: ${(e as Error).message}`); }
    };
    const config: Record<string, unknown> = existsSync(join(dir, 'tokenizer_config.json')) ? readJson(join(dir, 'tokenizer_config.json')) : {};
    const tokenizer = new ChatTokenizer(readJson(tjPath), config, chatTemplateOf(dir, config));
    tokenizer.dir = dir;
    return tokenizer;
  }

  /** the model folder it was loaded from (lets another thread load the same tokenizer) */
  dir: string | null = null;

  get vocabSize(): number { return this.tokenizer.get_vocab(true).size; }

  encode(text: string, addSpecialTokens = true): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: addSpecialTokens }).ids;
  }

  decode(ids: ArrayLike<number>, skipSpecialTokens = true): string {
    if (ids.length === 0) return '';
    return this.tokenizer.decode(Array.from(ids), { skip_special_tokens: skipSpecialTokens });
  }

  /** One token's text piece as the vocabulary spells it (for --json output and debugging). */
  tokenText(id: number): string { return this.tokenizer.id_to_token(id) ?? ''; }

  isSpecial(id: number): boolean { return this.specialIds.has(id); }

  tokenId(text: string): number | undefined { return this.tokenizer.token_to_id(text); }

  /** The prompt text exactly as apply_chat_template(..., tokenize=False) renders it. */
  renderChat(messages: ChatMessage[], opts: RenderOptions = {}): string {
    const msgs = messages.map(normaliseMessage);
    if (!this.template) return msgs.map((m) => m.content).join('\n');
    return this.template.render({
      ...this.specialTokens,
      messages: msgs,
      tools: opts.tools && opts.tools.length > 0 ? opts.tools : undefined,
      add_generation_prompt: opts.addGenerationPrompt ?? true,
      ...opts.templateKwargs,
    });
  }

  /** Prompt token ids for a conversation: the rendered template encoded without adding special tokens (the template holds them). */
  encodeChat(messages: ChatMessage[], opts: RenderOptions = {}): number[] {
    const text = this.renderChat(messages, opts);
    return this.template ? this.encode(text, false) : this.encode(text, true);
  }
}

function normaliseMessage(m: ChatMessage): Record<string, unknown> {
  const content = typeof m.content === 'string' ? m.content
    : Array.isArray(m.content) ? m.content.filter((p) => p.type === 'text' && typeof p.text === 'string').map((p) => p.text).join('\n')
    : '';
  const out: Record<string, unknown> = { ...m, content };
  if (m.tool_calls) {
    // templates read tool_call.function.arguments as a mapping (or a string they pass through)
    out.tool_calls = m.tool_calls.map((tc) => ({ ...tc, function: { ...tc.function, arguments: parseArgs(tc.function.arguments) } }));
  }
  return out;
}

function parseArgs(args: string | Record<string, unknown>): string | Record<string, unknown> {
  if (typeof args !== 'string') return args;
  try { const v = JSON.parse(args); return v && typeof v === 'object' && !Array.isArray(v) ? v : args; } catch { return args; }
}

/**
 * A model folder's chat template: tokenizer_config.json's `chat_template` (a string, or a list whose
 * 'default' entry wins), else chat_template.jinja; null when it has none. `config` is the parsed
 * tokenizer_config.json when the caller has it already.
 */
export function chatTemplateOf(dir: string, config?: Record<string, unknown>): string | null {
  let cfg = config;
  if (!cfg) {
    try { cfg = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>; } catch { cfg = {}; }
  }
  const ct = cfg.chat_template;
  let template: string | null = null;
  if (typeof ct === 'string') template = ct;
  else if (Array.isArray(ct)) template = (ct.find((t) => t?.name === 'default') ?? ct[0])?.template ?? null;
  const jinjaFile = join(dir, 'chat_template.jinja');
  if (!template && existsSync(jinjaFile)) template = readFileSync(jinjaFile, 'utf8');
  return template;
}
