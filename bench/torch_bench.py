#!/usr/bin/env python3
"""PyTorch-CPU twin of `openclaw-rl bench train` and `bench engine`, for side-by-side runs.

The same workload as the TypeScript benchmarks on a random-weight Llama of the same shape
(src/bench/shapes.ts): training is batch x seq tokens (a quarter prompt, three quarters response),
a PPO clipped loss on every response token (behaviour log-prob -5, advantages +-1), one AdamW step,
LoRA rank r on all seven projections (alpha 2r) or every weight (--full); fp32, or bf16 autocast
(--bf16). Prefill is one prompt through the model (logits of its last row); decode is greedy with a
KV cache after a 16-token prompt. Prints one JSON object.

Runs where Debian's python3-torch is installed (with libopenblas0-pthread): `/usr/bin/python3
bench/torch_bench.py train --shape 135m`. Unset OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE first; torch
runs with one intra-op thread because OpenBLAS brings its own two (oversubscribing is 3-5x slower,
see /work/shared/reference/engines.md). The model code is written here for the benchmark only.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F

SHAPES = {
    # hidden, intermediate, layers, heads, kv heads, head dim, vocab, rope theta, tied
    "260k": dict(H=64, I=172, L=5, nh=8, nkv=4, hd=8, V=512, theta=10000.0, tied=True),
    "15m": dict(H=288, I=768, L=6, nh=6, nkv=2, hd=48, V=32000, theta=10000.0, tied=False),
    "135m": dict(H=576, I=1536, L=30, nh=9, nkv=3, hd=64, V=49152, theta=100000.0, tied=True),
    "0.6b": dict(H=1024, I=3072, L=28, nh=16, nkv=8, hd=128, V=151936, theta=1000000.0, tied=True),
}


class Linear(torch.nn.Module):
    """A frozen (or, with --full, trained) weight with an optional LoRA pair on top."""

    def __init__(self, out_f, in_f, rank, train_w):
        super().__init__()
        self.w = torch.nn.Parameter(torch.empty(out_f, in_f).uniform_(-0.02 * 3**0.5, 0.02 * 3**0.5), requires_grad=train_w)
        self.rank = rank
        if rank:
            self.a = torch.nn.Parameter(torch.empty(rank, in_f).uniform_(-1 / in_f**0.5, 1 / in_f**0.5))
            self.b = torch.nn.Parameter(torch.zeros(out_f, rank))
            self.scale = 2.0  # alpha = 2 rank

    def forward(self, x):
        y = F.linear(x, self.w)
        if self.rank:
            y = y + F.linear(F.linear(x, self.a), self.b) * self.scale
        return y


class Block(torch.nn.Module):
    def __init__(self, s, rank, full):
        super().__init__()
        H, I, hd = s["H"], s["I"], s["hd"]
        self.nh, self.nkv, self.hd = s["nh"], s["nkv"], hd
        self.n1 = torch.nn.Parameter(torch.ones(H), requires_grad=full)
        self.n2 = torch.nn.Parameter(torch.ones(H), requires_grad=full)
        self.q = Linear(self.nh * hd, H, rank, full)
        self.k = Linear(self.nkv * hd, H, rank, full)
        self.v = Linear(self.nkv * hd, H, rank, full)
        self.o = Linear(H, self.nh * hd, rank, full)
        self.g = Linear(I, H, rank, full)
        self.u = Linear(I, H, rank, full)
        self.d = Linear(H, I, rank, full)

    def forward(self, x, cos, sin, cache=None):
        B, T, _ = x.shape
        h = rmsnorm(x, self.n1)
        q = self.q(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if cache is not None:
            if "k" in cache:
                k = torch.cat([cache["k"], k], dim=2)
                v = torch.cat([cache["v"], v], dim=2)
            cache["k"], cache["v"] = k, v
        rep = self.nh // self.nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        S = k.shape[2]
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        if T > 1:
            mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
            att = att.masked_fill(~mask, float("-inf"))
        att = torch.softmax(att.float(), dim=-1).to(q.dtype)
        y = (att @ v).transpose(1, 2).reshape(B, T, self.nh * self.hd)
        x = x + self.o(y)
        h = rmsnorm(x, self.n2)
        return x + self.d(F.silu(self.g(h)) * self.u(h))


def rmsnorm(x, w, eps=1e-5):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * w


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return x * cos.to(x.dtype) + torch.cat([-x2, x1], dim=-1) * sin.to(x.dtype)


class Model(torch.nn.Module):
    def __init__(self, s, rank, full):
        super().__init__()
        self.s = s
        self.embed = torch.nn.Parameter(torch.empty(s["V"], s["H"]).uniform_(-0.02 * 3**0.5, 0.02 * 3**0.5), requires_grad=full)
        self.blocks = torch.nn.ModuleList(Block(s, rank, full) for _ in range(s["L"]))
        self.norm = torch.nn.Parameter(torch.ones(s["H"]), requires_grad=full)
        self.head = None if s["tied"] else torch.nn.Parameter(torch.empty(s["V"], s["H"]).uniform_(-0.02, 0.02), requires_grad=full)
        inv = 1.0 / (s["theta"] ** (torch.arange(0, s["hd"], 2).float() / s["hd"]))
        self.inv = inv

    def trig(self, pos):
        f = torch.outer(pos.float(), self.inv)
        e = torch.cat([f, f], dim=-1)
        return e.cos(), e.sin()

    def hidden(self, ids, start=0, caches=None):
        x = self.embed[ids]
        cos, sin = self.trig(torch.arange(start, start + ids.shape[1]))
        for i, b in enumerate(self.blocks):
            x = b(x, cos, sin, None if caches is None else caches[i])
        return rmsnorm(x, self.norm)

    def logits(self, h):
        return F.linear(h, self.embed if self.head is None else self.head)


def median_time(fn, reps):
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_train(a):
    s = SHAPES[a.shape]
    torch.manual_seed(1)
    model = Model(s, 0 if a.full else a.rank, a.full)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(params, lr=1e-5)
    V, B, T = s["V"], a.batch, a.seq
    prompt = max(1, T // 4)
    ids = torch.tensor([[(i * 7919 + b * 104729 + 3) % V for i in range(T)] for b in range(B)])
    adv = torch.tensor([1.0 if t % 2 else -1.0 for t in range(T - prompt)]).expand(B, -1)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.bf16):
            h = model.hidden(ids)
            # logits of the response rows only (the row before each response token)
            lg = model.logits(h[:, prompt - 1 : T - 1]).float()
        lp = torch.log_softmax(lg, dim=-1).gather(-1, ids[:, prompt:].unsqueeze(-1)).squeeze(-1)
        ratio = torch.exp(lp - (-5.0))
        loss = -torch.minimum(ratio * adv, ratio.clamp(0.8, 1.28) * adv).mean()
        loss.backward()
        opt.step()

    step()  # warm-up
    sec = median_time(step, a.steps)
    return dict(bench="train", shape=a.shape, mode="full" if a.full else "lora", dtype="bf16-autocast" if a.bf16 else "fp32",
                rank=a.rank, batch=B, seq=T, stepMs=round(sec * 1000, 1), tokensPerSec=round(B * T / sec, 1))


@torch.no_grad()
def bench_engine(a):
    s = SHAPES[a.shape]
    torch.manual_seed(1)
    model = Model(s, 0, False)
    dtype = torch.bfloat16 if a.bf16 else torch.float32
    model.to(dtype)
    V = s["V"]
    prompt = torch.tensor([[(i * 7919 + 3) % V for i in range(a.prefill)]])

    def prefill():
        caches = [dict() for _ in model.blocks]
        h = model.hidden(prompt, 0, caches)
        model.logits(h[:, -1:])

    prefill()
    pre = median_time(prefill, max(2, a.reps))
    caches = [dict() for _ in model.blocks]
    h = model.hidden(prompt[:, :16], 0, caches)
    tok = model.logits(h[:, -1:]).argmax(-1)
    times = []
    for i in range(a.decode):
        t0 = time.perf_counter()
        h = model.hidden(tok, 16 + i, caches)
        tok = model.logits(h).argmax(-1)
        times.append(time.perf_counter() - t0)
    dec = statistics.median(times)
    return dict(bench="engine", shape=a.shape, dtype="bf16" if a.bf16 else "fp32", prefillTokens=a.prefill,
                prefillTokensPerSec=round(a.prefill / pre, 1), decodeTokens=a.decode, decodeTokensPerSec=round(1 / dec, 1))


def bench_matmul(a):
    """fp32 and bf16 GFLOPS of one training-sized product (1024 x 576 . 576 x 3072), median of --reps."""
    x, y = torch.randn(1024, 576), torch.randn(576, 3072)
    out = dict(bench="matmul", shape="1024x576x3072")
    for name, dt in (("fp32", torch.float32), ("bf16", torch.bfloat16)):
        xa, ya = x.to(dt), y.to(dt)
        xa @ ya
        times = []
        for _ in range(a.reps):
            t0 = time.perf_counter()
            xa @ ya
            times.append(time.perf_counter() - t0)
        out[name + "Gflops"] = round(2 * 1024 * 576 * 3072 / statistics.median(times) / 1e9, 1)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["train", "engine", "matmul"])
    p.add_argument("--shape", default="135m", choices=sorted(SHAPES))
    p.add_argument("--bf16", action="store_true", help="bf16 autocast (train) or bf16 weights (engine)")
    p.add_argument("--full", action="store_true", help="train every weight instead of LoRA")
    p.add_argument("--rank", type=int, default=16)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--seq", type=int, default=256)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--prefill", type=int, default=256)
    p.add_argument("--decode", type=int, default=64)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (OpenBLAS runs its own)")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    r = bench_train(a) if a.what == "train" else bench_engine(a) if a.what == "engine" else bench_matmul(a)
    r.update(torch=torch.__version__, threads=a.threads)
    print(json.dumps(r))


if __name__ == "__main__":
    main()
