#!/usr/bin/env python3
"""PEFT compatibility check: the LoRA adapter openclaw-rl wrote loads in Hugging Face transformers +
peft, and gives the same per-token log-probs as the embedded engine, both for the base model and
with the adapter.

    node scripts/peft-compat.ts --model DIR --out OUTDIR
    python3 scripts/peft-compat.py OUTDIR [--tolerance 1e-3]

Exit codes: 0 match (or skipped, with the reason printed), 1 mismatch, 2 usage error.
Skips when torch, transformers, peft or safetensors are not installed (this project's CI machines
cannot reach PyPI)."""
import json
import math
import sys


def main() -> int:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    tol = 1e-3
    if "--tolerance" in sys.argv:
        tol = float(sys.argv[sys.argv.index("--tolerance") + 1])
        args = [a for a in args if a != str(sys.argv[sys.argv.index("--tolerance") + 1])]
    if len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    missing = []
    for name in ("torch", "transformers", "peft", "safetensors"):
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if missing:
        print(f"peft-compat: SKIPPED: Python packages not installed: {', '.join(missing)} "
              "(pip install torch transformers peft safetensors, e.g. on a GPU machine)")
        return 0
    import torch
    from transformers import AutoModelForCausalLM
    from peft import PeftModel

    with open(f"{args[0]}/reference.json") as f:
        ref = json.load(f)
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_pretrained(ref["model"], torch_dtype=torch.float32)
    base.eval()

    def logprobs(model, ids):
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0].float()
        lp = torch.log_softmax(logits, dim=-1)
        return [None] + [lp[i, ids[i + 1]].item() for i in range(len(ids) - 1)]

    def compare(label, ours, theirs):
        worst = max(abs(a - b) for a, b in zip(ours[1:], theirs[1:]))
        print(f"peft-compat: {label}: max |ours - transformers| = {worst:.2e} over {len(ours) - 1} tokens")
        return worst

    worst_base = max(compare(f"base, sequence {k}", s["base"], logprobs(base, s["ids"])) for k, s in enumerate(ref["sequences"]))
    adapted = PeftModel.from_pretrained(base, ref["adapter"])
    adapted.eval()
    worst_adapted = max(compare(f"adapter, sequence {k}", s["adapted"], logprobs(adapted, s["ids"])) for k, s in enumerate(ref["sequences"]))
    shift = max(abs(a - b) for s in ref["sequences"] for a, b in zip(s["adapted"][1:], s["base"][1:]))
    print(f"peft-compat: the adapter moves our log-probs by up to {shift:.2e} (the check is meaningful only if this is well above the tolerance)")
    ok = worst_base <= tol and worst_adapted <= tol and shift > 10 * tol and not math.isnan(worst_adapted)
    print(f"peft-compat: {'OK' if ok else 'MISMATCH'} (tolerance {tol})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
