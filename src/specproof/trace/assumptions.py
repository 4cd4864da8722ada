"""The assumptions a trace states: the general ones (each source states its calls' own, see
:class:`specproof.trace.sources.base.Source`)."""

from __future__ import annotations

_GENERAL = (
    "the sampler is deterministic given the random numbers it draws through the intercepted calls "
    "(checked after each run: PyTorch's default generator, NumPy's legacy global generator, Python's random "
    "module and the provided NumPy generator are left untouched)",
    "each uniform affects the rest of the run only through comparisons, and every outcome occupies one interval "
    "of the grid: ASSUMED, not proved. Breakpoints are found by bisection between probes at 0, N/4, N/2, 3N/4, "
    "N - 1; an outcome seen on two separated intervals is refused; the law of the rest is recomputed at both ends "
    "and the middle of every interval. An interval between two probes that give the same outcome is not seen "
    "(a sampler whose outcome changes only on [15/64, 1/4), say, is traced wrongly)",
    "the sampler does not depend on anything else that changes between runs (its arguments are deep-copied for "
    "every run, so a sampler may write into them). The clock (time's functions, the calendar functions without "
    "a time) is frozen and shifted, and entropy (os.urandom, secrets, uuid1 and uuid4, SystemRandom) refused; NOT "
    "varied, so a dependency on them is not seen: datetime.now, utcnow and today, os.times and "
    "resource.getrusage, a time more than about 6.6 hours from now, and values constant within a process (the "
    "str hash seed and so set order, id(), the pid, environment variables, files)",
)

_READ_ALL = (
    "every uniform was used, as far as PyTorch's function mode sees, only in comparisons (<, <=, >, >=) "
    "with values computed without any uniform: each breakpoint was read from the comparison itself (the same "
    "torch call on grid values), and each piece's run checked at its last grid point and at 0, N/4, N/2, "
    "3N/4, N - 1. A use the mode cannot see (TorchScript, C++ kernels, another thread) that changes the "
    "outcome only between those points would be missed, as it would by bisection"
)


def _pushed_note(pushed: int, refuted: int) -> str:
    """The result's note on the draws pushed forward (and on those whose check run disagreed)."""

    def prefixes(n: int) -> str:
        return f"{n} prefix{'es' if n != 1 else ''}"

    notes = []
    if pushed:
        notes.append(
            f"at {prefixes(pushed)} the last random draw, a torch.multinomial, was only moved into the output "
            "(squeeze, reshape, indexing, cat, stack), as far as PyTorch's function mode sees, and never compared, "
            "converted or computed with: the output at each of its categories was read from that one run (the "
            "category written into the tensors holding the draw) instead of one run per category, and checked by "
            "one run at another category. A use the mode cannot see (TorchScript, DLPack, C++ kernels, another "
            "thread) that changes the run only at unchecked categories would be missed, as a comparison's unseen "
            "use would be"
        )
    if refuted:
        notes.append(
            f"at {prefixes(refuted)} the check run disagreed and every category was run (a use of the draw "
            "the function mode did not see)"
        )
    return "pushforward: " + "; ".join(notes)


_EXPONENTIAL_ZEROS = (
    "exponential_zeros=True: in each race with zero weights, the first zero-weight id (in index order) whose E_i is "
    "-0.0 wins through the NaN of 0 / -0.0, each E_i being -0.0 independently with probability 2^-53 (PyTorch's CPU "
    "kernel at u = 0); the code's argmax decides that race with E = -0.0 there and +inf elsewhere. Failing that, the "
    "first -inf-weight id whose E_i is -0.0 wins through -inf / -0.0 = +inf (same probabilities). A zero E_i at a "
    "positive weight (-inf there, so that id loses) is still not modelled: it changes a race with P positive weights "
    "by at most 1 - (1 - 2^-53)^P"
)
