// The chat format of `stories260k-chat`: ChatML turns (`<|im_start|>role\n…<|im_end|>`), tools listed
// compactly in the system turn, tool calls as `<tool_call>{json}</tool_call>` and tool results as
// `<tool_response>` blocks in a user turn — the Qwen/Hermes conventions the server already parses,
// written short because the model's context is 512 tokens. The tokens below are added to the
// 512-token BPE vocabulary (which spells everything else with single characters or byte fallback).

/** Tokens added to the vocabulary, in id order after the base vocabulary. */
export const ADDED_TOKENS: { content: string; special: boolean }[] = [
  { content: '<|im_start|>', special: true },
  { content: '<|im_end|>', special: true },
  // not special: they must survive decoding so the server can parse tool calls out of the text
  { content: '<tool_call>', special: false },
  { content: '</tool_call>', special: false },
  { content: '<tool_response>', special: false },
  { content: '</tool_response>', special: false },
  { content: '[HINT_START]', special: false },
  { content: '[HINT_END]', special: false },
];

export const END_OF_TURN = '<|im_end|>';

/**
 * Jinja chat template (rendered by @huggingface/jinja with transformers' variables). A tool is listed
 * as `- name(param, …): description`; a tool call's arguments are written as JSON.
 */
export const CHAT_TEMPLATE = [
  "{{- bos_token -}}",
  "{%- set ns = namespace(start=0) -%}",
  "{%- if messages and messages[0].role == 'system' -%}{%- set ns.start = 1 -%}{%- endif -%}",
  "{%- if tools -%}",
  "{{- '<|im_start|>system\\n' -}}",
  "{%- if ns.start == 1 -%}{{- messages[0].content + '\\n' -}}{%- endif -%}",
  "{{- '# Tools\\n' -}}",
  "{%- for tool in tools -%}",
  "{%- set fn = tool.function if tool.function is defined else tool -%}",
  "{{- '- ' + fn.name + '(' -}}",
  "{%- if fn.parameters is defined and fn.parameters.properties is defined -%}",
  "{%- for key, value in fn.parameters.properties | items -%}{{- key -}}{%- if not loop.last -%}{{- ', ' -}}{%- endif -%}{%- endfor -%}",
  "{%- endif -%}",
  "{{- ')' -}}",
  "{%- if fn.description -%}{{- ': ' + fn.description -}}{%- endif -%}",
  "{{- '\\n' -}}",
  "{%- endfor -%}",
  "{{- 'To call a tool, answer <tool_call>{\"name\": name, \"arguments\": {…}}</tool_call>.<|im_end|>\\n' -}}",
  "{%- elif ns.start == 1 -%}",
  "{{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' -}}",
  "{%- endif -%}",
  "{%- for message in messages[ns.start:] -%}",
  "{%- if message.role == 'assistant' -%}",
  "{{- '<|im_start|>assistant\\n' -}}",
  "{%- if message.content -%}{{- message.content -}}{%- endif -%}",
  "{%- if message.tool_calls -%}{%- for tc in message.tool_calls -%}",
  "{%- set f = tc.function if tc.function is defined else tc -%}",
  "{{- '<tool_call>{\"name\": \"' + f.name + '\", \"arguments\": ' -}}",
  "{%- if f.arguments is string -%}{{- f.arguments -}}{%- else -%}{{- f.arguments | tojson -}}{%- endif -%}",
  "{{- '}</tool_call>' -}}",
  "{%- endfor -%}{%- endif -%}",
  "{{- '<|im_end|>\\n' -}}",
  "{%- elif message.role == 'tool' -%}",
  "{%- if loop.first or loop.previtem.role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}",
  "{{- '\\n<tool_response>' + message.content + '</tool_response>' -}}",
  "{%- if loop.last or loop.nextitem.role != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}",
  "{%- else -%}",
  "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' -}}",
  "{%- endif -%}",
  "{%- endfor -%}",
  "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}",
].join('');
