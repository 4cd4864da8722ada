"""The assumptions a trace states: the general ones, and one per kind of random call."""

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
    "every run, so a sampler may write into them)",
)

_READ_ALL = ("every uniform was used, as far as PyTorch's function mode sees, only in comparisons (<, <=, >, >=) "
             "with values computed without any uniform: each breakpoint was read from the comparison itself (the same "
             "torch call on grid values), and each piece's run checked at its last grid point and at 0, N/4, N/2, "
             "3N/4, N - 1. A use the mode cannot see (TorchScript, C++ kernels, another thread) that changes the "
             "outcome only between those points would be missed, as it would by bisection")

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
            "use would be")
    if refuted:
        notes.append(f"at {prefixes(refuted)} the check run disagreed and every category was run (a use of the draw "
                     "the function mode did not see)")
    return "pushforward: " + "; ".join(notes)


_CALL_ASSUMPTIONS = {
    "torch.rand": "torch.rand: each element k/2^24 (float32) or k/2^53 (float64), k uniform on the grid",
    "torch.rand_like": "torch.rand_like: each element k/2^24 (float32) or k/2^53 (float64), k uniform on the grid",
    "Tensor.uniform_": "Tensor.uniform_(a, b): the bounds in the tensor's dtype, u (b - a) + a in double with u = "
                       "k/2^24 (float32) or k/2^53 (float64), rounded to the tensor's dtype (PyTorch's CPU kernel)",
    "torch.multinomial": "torch.multinomial: an exact categorical over the float weights as given (Fraction(w_i) "
                         "/ sum); PyTorch's own sampling kernel (a float exponential race) is not traced",
    "torch.randint": "torch.randint: each element exactly uniform over [low, high); PyTorch's CPU kernel takes a "
                     "random 32- or 64-bit integer modulo the range, off from uniform by at most range / 2^32 "
                     "(not modelled)",
    "Tensor.exponential_": "Tensor.exponential_, traced only as the race argmax(w / E, dim=-1): IDEALIZED: E_i "
                           "i.i.d. exact Exp(lambda), the division and the argmax exact, so row r's winner is i with "
                           "probability w_i / sum_j w_j over its positive finite float weights (ties have probability "
                           "0; zero and negative weights never win); a row with a NaN or +inf weight or no positive "
                           "weight is decided by the code's own argmax (it does not depend on E). PyTorch's CPU kernel "
                           "is not traced: it computes E = -(1/lambda) log(1 - u) in double, u = k/2^53, a discrete "
                           "E that is -0.0 at k = 0 (probability 2^-53 per element, pytorch issues #22557, #192577), "
                           "where w_i / E_i is NaN at a zero weight and argmax returns that zero-weight id: with "
                           "exponential_zeros=False (the default) that edge is NOT in this law",
    "Generator.random": "numpy Generator.random: k/2^53 (float64) or k/2^24 (float32), k uniform on the grid",
    "Generator.uniform": "numpy Generator.uniform(a, b): a + (b - a) * k/2^53 in float64",
    "Generator.choice": "numpy Generator.choice: an exact categorical over p (Fraction(p_i) / sum), uniform "
                        "without p; NumPy's own inverse-CDF search is not traced",
}


_EXPONENTIAL_ZEROS = (
    "exponential_zeros=True: in each race with zero weights, the first zero-weight id (in index order) whose E_i is "
    "-0.0 wins through the NaN of 0 / -0.0, each E_i being -0.0 independently with probability 2^-53 (PyTorch's CPU "
    "kernel at u = 0); the code's argmax decides that race with E = -0.0 there and +inf elsewhere. Failing that, the "
    "first -inf-weight id whose E_i is -0.0 wins through -inf / -0.0 = +inf (same probabilities). A zero E_i at a "
    "positive weight (-inf there, so that id loses) is still not modelled: it changes a race with P positive weights "
    "by at most 1 - (1 - 2^-53)^P")
