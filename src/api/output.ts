// Turns the model's text into an OpenAI assistant message as it streams: `<think>…</think>` becomes
// reasoning_content, `<tool_call>{json}</tool_call>` blocks become tool_calls (Qwen/Hermes format),
// the rest is content. Text that might be the start of a tag is held back until it is decided.

export interface OutputFormat {
  /** the model may open its answer with <think> */
  reasoning: boolean;
  /** the model writes tool calls as <tool_call>{"name", "arguments"}</tool_call> */
  toolCalls: boolean;
}

export interface ParsedToolCall { name: string; arguments: string }
export interface Delta { content?: string; reasoning?: string }

const THINK_OPEN = '<think>', THINK_CLOSE = '</think>', CALL_OPEN = '<tool_call>';
const CALL_BLOCK = /<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g;

/** Length of the longest suffix of `s` that is a proper prefix of `tag`. */
function partialTagAtEnd(s: string, tag: string): number {
  for (let n = Math.min(tag.length - 1, s.length); n > 0; n--) if (s.endsWith(tag.slice(0, n))) return n;
  return 0;
}

export class OutputParser {
  private readonly format: OutputFormat;
  private mode: 'detect' | 'reasoning' | 'content' | 'tools';
  private pending = '';
  private toolText = '';
  content = '';
  reasoning = '';
  private afterThink = false;

  constructor(format: OutputFormat) {
    this.format = format;
    this.mode = format.reasoning ? 'detect' : 'content';
  }

  push(text: string): Delta {
    this.pending += text;
    const out: Delta = {};
    const emit = (kind: 'content' | 'reasoning', s: string) => this.emit(out, kind, s);
    for (;;) {
      if (this.mode === 'detect') {
        const t = this.pending.trimStart();
        if (t.startsWith(THINK_OPEN)) { this.pending = t.slice(THINK_OPEN.length); this.mode = 'reasoning'; continue; }
        if (t.length < THINK_OPEN.length && THINK_OPEN.startsWith(t)) return out; // undecided
        this.mode = 'content';
        continue;
      }
      if (this.mode === 'reasoning') {
        const i = this.pending.indexOf(THINK_CLOSE);
        if (i >= 0) {
          emit('reasoning', this.pending.slice(0, i).replace(/\n+$/, ''));
          this.pending = this.pending.slice(i + THINK_CLOSE.length);
          this.mode = 'content';
          this.afterThink = true;
          continue;
        }
        // hold back a possible '</think>' and the newlines that usually precede it
        const tag = partialTagAtEnd(this.pending, THINK_CLOSE);
        const body = this.pending.slice(0, this.pending.length - tag);
        const keep = tag + (body.length - body.replace(/\n+$/, '').length);
        emit('reasoning', this.pending.slice(0, this.pending.length - keep));
        this.pending = this.pending.slice(this.pending.length - keep);
        return out;
      }
      if (this.mode === 'content') {
        if (this.format.toolCalls) {
          const i = this.pending.indexOf(CALL_OPEN);
          if (i >= 0) {
            emit('content', this.pending.slice(0, i));
            this.toolText = this.pending.slice(i);
            this.pending = '';
            this.mode = 'tools';
            return out;
          }
        }
        const keep = this.format.toolCalls ? partialTagAtEnd(this.pending, CALL_OPEN) : 0;
        emit('content', this.pending.slice(0, this.pending.length - keep));
        this.pending = this.pending.slice(this.pending.length - keep);
        return out;
      }
      // tools: everything from the first <tool_call> is parsed at the end
      this.toolText += this.pending;
      this.pending = '';
      return out;
    }
  }

  /** Append to content or reasoning, dropping the newlines templates put around a think block. */
  private emit(out: Delta, kind: 'content' | 'reasoning', s: string): void {
    if ((kind === 'reasoning' && this.reasoning === '') || (kind === 'content' && this.content === '' && this.afterThink)) s = s.replace(/^\n+/, '');
    if (!s) return;
    out[kind] = (out[kind] ?? '') + s;
    this[kind] += s;
  }

  /** End of generation: the last held-back text and the parsed tool calls. */
  finish(): { delta: Delta; toolCalls: ParsedToolCall[] } {
    const delta: Delta = {};
    if (this.mode === 'reasoning') this.emit(delta, 'reasoning', this.pending.replace(/\n+$/, ''));
    else if (this.pending) this.emit(delta, 'content', this.pending);
    this.pending = '';
    const toolCalls: ParsedToolCall[] = [];
    if (this.toolText) {
      let leftover = this.toolText;
      for (const m of this.toolText.matchAll(CALL_BLOCK)) {
        try {
          const call = JSON.parse(m[1]) as { name?: unknown; arguments?: unknown };
          if (typeof call.name !== 'string') continue;
          toolCalls.push({ name: call.name, arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}) });
          leftover = leftover.replace(m[0], '');
        } catch { /* not JSON: stays as text */ }
      }
      // text that did not parse as a call is returned as content rather than lost
      this.emit(delta, 'content', leftover.trim());
    }
    return { delta, toolCalls };
  }
}

/** What a model's chat template says about its output format. */
export function outputFormatOf(chatTemplate: string | null): OutputFormat {
  return { reasoning: !!chatTemplate && chatTemplate.includes('<think>'), toolCalls: !!chatTemplate && chatTemplate.includes('<tool_call>') };
}
