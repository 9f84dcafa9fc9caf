#!/usr/bin/env python3
"""Hugging Face compatibility check: what openclaw-rl writes loads in transformers + peft and gives
what the embedded engine gives.

  adapter  the PEFT LoRA adapter: per-token log-probs of the base model and with the adapter
  merged   `openclaw-rl merge` output (AutoModelForCausalLM): log-probs as with the adapter, token ids
  full     `openclaw-rl sft --full` output (AutoModelForCausalLM + AutoTokenizer): log-probs, token
           ids, apply_chat_template text and ids (system, user, assistant, tools, tool calls and
           results), end-of-sequence ids

    node scripts/peft-compat.ts --model DIR --out OUTDIR
    PY=$(scripts/python-venv.sh) && "$PY" scripts/peft-compat.py OUTDIR [--tolerance 1e-3] [--strict]

Exit codes: 0 all match (or skipped, with the reason printed), 1 a mismatch, 2 usage error.
Skips when torch, transformers, peft or safetensors are not installed, unless --strict (then 1).
scripts/python-venv.sh builds an environment with them from local wheel folders."""
import argparse
import json
import math
import sys

failures = []


def check(ok, label, detail=""):
    print(f"peft-compat: {'ok  ' if ok else 'FAIL'} {label}{': ' + detail if detail else ''}")
    if not ok:
        failures.append(label)


def first_difference(a, b):
    """Index of the first element where two sequences differ (the shorter length when one is a prefix)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("outdir", help="the folder scripts/peft-compat.ts wrote")
    parser.add_argument("--tolerance", type=float, default=1e-3, help="largest |difference| of a log-prob (default 1e-3)")
    parser.add_argument("--strict", action="store_true", help="fail (instead of skipping) when the packages are missing")
    args = parser.parse_args()  # exits 2 on a usage error
    missing = []
    for name in ("torch", "transformers", "peft", "safetensors"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        print(f"peft-compat: {'FAILED' if args.strict else 'SKIPPED'}: Python packages not installed: {', '.join(missing)} "
              "(scripts/python-venv.sh builds an environment with them from local wheel folders)")
        return 1 if args.strict else 0
    import torch
    import transformers
    import peft
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from peft import PeftModel

    transformers.utils.logging.disable_progress_bar()
    # the models are tiny: more threads only spin on a shared machine
    torch.set_num_threads(1)

    tol = args.tolerance
    print(f"peft-compat: torch {torch.__version__}, transformers {transformers.__version__}, peft {peft.__version__}, tolerance {tol}")
    try:
        with open(f"{args.outdir}/reference.json") as f:
            ref = json.load(f)
    except FileNotFoundError:
        print(f"peft-compat: no reference.json in {args.outdir}: run scripts/peft-compat.ts --out {args.outdir} first", file=sys.stderr)
        return 2
    torch.manual_seed(0)

    def load_model(path):
        try:
            model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
        except TypeError:  # transformers 4 names it torch_dtype
            model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32)
        return model.eval()

    def logprobs(model, ids):
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].float()
        lp = torch.log_softmax(logits, dim=-1)
        return [None] + [lp[i, ids[i + 1]].item() for i in range(len(ids) - 1)]

    def worst(ours, theirs):
        d = max(abs(a - b) for a, b in zip(ours[1:], theirs[1:]))
        return math.inf if math.isnan(d) else d

    def compare_logprobs(label, pairs):
        """pairs: (our log-probs, the sequence's ids) for one model"""
        d = max(worst(ours, theirs) for ours, theirs in pairs)
        n = sum(len(ours) - 1 for ours, _ in pairs)
        check(d <= tol, f"{label}: log-probs", f"max |ours - transformers| = {d:.2e} over {n} tokens")
        return d

    def compare_tokens(label, tokenizer, cases):
        bad = [c for c in cases if tokenizer(c["text"], add_special_tokens=c["addSpecialTokens"])["input_ids"] != c["ids"]]
        for c in bad[:3]:
            print(f"peft-compat:      {c['text']!r} (special tokens {c['addSpecialTokens']}): ours {c['ids']}, "
                  f"transformers {tokenizer(c['text'], add_special_tokens=c['addSpecialTokens'])['input_ids']}")
        check(not bad, f"{label}: token ids", f"{len(cases) - len(bad)}/{len(cases)} strings equal ({type(tokenizer).__name__})")

    # adapter: base model and base + PEFT adapter
    base = load_model(ref["model"])
    seqs = ref["sequences"]
    compare_logprobs("base model", [(s["base"], logprobs(base, s["ids"])) for s in seqs])
    adapted = PeftModel.from_pretrained(base, ref["adapter"]).eval()
    compare_logprobs("PEFT adapter", [(s["adapted"], logprobs(adapted, s["ids"])) for s in seqs])
    shift = max(worst(s["adapted"], s["base"]) for s in seqs)
    check(shift > 10 * tol, "the adapter changes the log-probs", f"by up to {shift:.2e} (the check is meaningful only if this is well above the tolerance)")
    del adapted, base

    # merged: `openclaw-rl merge` scores as the adapter did
    merged = ref["merged"]
    compare_logprobs("merged model", [(s["adapted"], logprobs(load_model(merged["dir"]), s["ids"])) for s in seqs])
    compare_tokens("merged model", AutoTokenizer.from_pretrained(merged["dir"]), merged["tokens"])

    # full: `openclaw-rl sft --full`
    full = ref["full"]
    model = load_model(full["dir"])
    tokenizer = AutoTokenizer.from_pretrained(full["dir"])
    compare_logprobs("full SFT model", [(s["trained"], logprobs(model, s["ids"])) for s in full["sequences"]])
    shift = max(worst(s["trained"], s["base"]) for s in full["sequences"])
    check(shift > 10 * tol, "full SFT changes the log-probs", f"by up to {shift:.2e}")
    compare_tokens("full SFT model", tokenizer, full["tokens"])
    eos = model.generation_config.eos_token_id
    eos = sorted(set(eos if isinstance(eos, list) else [eos]))
    check(eos == sorted(set(full["eosTokenIds"])), "full SFT model: end-of-sequence ids", f"ours {sorted(set(full['eosTokenIds']))}, generation_config {eos}")
    check(tokenizer.bos_token == full["specialTokens"]["bos"] and tokenizer.eos_token == full["specialTokens"]["eos"],
          "full SFT model: bos/eos tokens", f"ours {full['specialTokens']}, transformers {tokenizer.bos_token!r}/{tokenizer.eos_token!r}")

    # chat template: an OpenAI client sends tool-call arguments as a JSON string, which our renderer
    # parses into a mapping; transformers' chat-template convention is the mapping itself
    def hf_messages(messages):
        out = []
        for m in messages:
            m = dict(m)
            if m.get("tool_calls"):
                m["tool_calls"] = [{**tc, "function": {**tc["function"], "arguments": json.loads(tc["function"]["arguments"])
                                                       if isinstance(tc["function"]["arguments"], str) else tc["function"]["arguments"]}}
                                   for tc in m["tool_calls"]]
            out.append(m)
        return out

    text_bad, ids_bad = 0, 0
    for k, c in enumerate(full["chats"]):
        kw = dict(tools=c["tools"], add_generation_prompt=c["addGenerationPrompt"])
        text = tokenizer.apply_chat_template(hf_messages(c["messages"]), tokenize=False, **kw)
        ids = tokenizer.apply_chat_template(hf_messages(c["messages"]), tokenize=True, **kw)
        ids = list(ids["input_ids"] if hasattr(ids, "keys") else ids)
        if text != c["text"]:
            text_bad += 1
            if text_bad <= 3:
                at = first_difference(text, c["text"])
                print(f"peft-compat:      chat {k}: texts differ from character {at}: ours {c['text'][max(0, at - 20):at + 40]!r}, "
                      f"transformers {text[max(0, at - 20):at + 40]!r}")
        elif ids != c["ids"]:
            ids_bad += 1
            if ids_bad <= 3:
                at = first_difference(ids, c["ids"])
                print(f"peft-compat:      chat {k}: same text, ids differ from position {at}: ours {c['ids'][max(0, at - 3):at + 6]}, "
                      f"transformers {ids[max(0, at - 3):at + 6]}")
    n = len(full["chats"])
    roles = sorted({m["role"] for c in full["chats"] for m in c["messages"]})
    check(text_bad == 0, "full SFT model: apply_chat_template text", f"{n - text_bad}/{n} conversations equal (roles {', '.join(roles)}; tools and tool calls in {sum(1 for c in full['chats'] if c['tools'])})")
    check(ids_bad == 0 and text_bad == 0, "full SFT model: apply_chat_template ids", f"{n - ids_bad - text_bad}/{n} equal")

    print(f"peft-compat: {'OK' if not failures else 'MISMATCH: ' + '; '.join(failures)} (tolerance {tol})")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
