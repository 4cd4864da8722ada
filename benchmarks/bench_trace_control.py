"""CPU time per trace, to see what the randomness check (issue 33, ``specproof.trace.control``) costs.

Two samplers: the textbook float32 torch verifier at V = 16 (random softmax rows, seed 0) and a sampler of one
``torch.multinomial`` draw. Run it on this tree and on another (a checkout of main) with
``PYTHONPATH=src python benchmarks/bench_trace_control.py``; compare the lines (CPU time, one process each, so
a loaded machine changes them less than wall time).
"""

from __future__ import annotations

import time

import torch

from specproof.trace.tracer import trace


def verify(p, q):
    x = int(torch.multinomial(q, 1))
    if torch.rand(()) < p[x] / q[x]:
        return x
    return int(torch.multinomial(torch.clamp(p - q, min=0), 1))


def main() -> None:
    torch.manual_seed(0)
    p, q = torch.softmax(torch.randn(16), -1), torch.softmax(torch.randn(16), -1)
    w = torch.tensor([0.5, 0.25, 0.25])

    def one_draw():
        return int(torch.multinomial(w, 1))

    for name, sampler, args, repeat in (("V = 16 position", verify, (p, q), 5), ("one draw", one_draw, (), 50)):
        result = trace(sampler, args)
        start = time.process_time()
        for _ in range(repeat):
            result = trace(sampler, args)
        ms = (time.process_time() - start) / repeat * 1000
        print(f"{name}: {ms:.1f} ms CPU per trace, {result.runs} runs; {getattr(result, 'control', '(no check)')[:60]}")


if __name__ == "__main__":
    main()
