"""Figures for transcripts, drawn from what the trusted checker re-derived (never from claims).

- :func:`pair_figure`: for one (p, q) pair, p, q, min(p, q) (the accept mass) and the residual
  (p - q)+ over the tokens that carry the mass, optionally on a log scale;
- :func:`chain_figure`: for one chain step, the exact law of the number of accepted drafts beside
  the law Leviathan et al.'s Eq. 1 assumes (alpha the same at every position: P(k) = alpha^k (1 -
  alpha) for k < gamma, alpha^gamma for k = gamma) at the reach-weighted mean alpha.

Written as SVG with matplotlib (the ``report`` extra), with a fixed hash salt, no date and text as
text, so the same certificate gives byte-identical files. Values are plotted as floats: the figure
is a picture of the exact law, not part of the proof.

References: Leviathan et al. 2023, Eq. 1 and Theorem 3.5.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

__all__ = ["TOP_TOKENS", "pair_figure", "chain_figure", "figures_for"]

#: A pair figure shows at most this many tokens: those with the largest max(p, q), in token order.
TOP_TOKENS = 24


_SERIES = {"p": "p", "q": "q", "min(p, q)": "accept", "(p − q)+": "residual"}


def _literal(text: str) -> str:
    """Text from a document drawn as it is: matplotlib would read ``$...$`` as mathtext."""
    return str(text).replace("$", r"\$")


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "specproof", "svg.fonttype": "none", "font.size": 8, "figure.dpi": 100})
    return plt


def _save(fig: Any, path: Path) -> Path:
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": None}, bbox_inches="tight")
    return path


def pair_figure(
    facts: Mapping[str, Any],
    path: str | Path,
    *,
    labels: Mapping[int, str] | None = None,
    log: bool = False,
    title: str = "",
) -> Path:
    """Draw p, q, min(p, q) and (p - q)+ of one checked pair as grouped bars; write SVG.

    Parameters
    ----------
    facts : mapping
        One entry of a valid :class:`specproof.checker.Verdict`'s ``facts`` for a one-position
        certificate (it holds the re-derived ``law``).
    path : str or Path
        Where to write the SVG.
    labels : mapping of int to str, optional
        Token texts by id, used on the x axis (ids otherwise).
    log : bool, optional
        A log-scale y axis (zeros are then not drawn).
    title : str, optional

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    KeyError
        If ``facts`` is not a one-position certificate's.
    ModuleNotFoundError
        Without matplotlib (``pip install 'specproof[report]'``).

    Notes
    -----
    The tokens shown are the :data:`TOP_TOKENS` with the largest max(p(x), q(x)), in token order;
    the caption says how many of V.
    """
    law = facts["law"]
    values = {
        name: [Fraction(x, law.den) for x in col]
        for name, col in (("p", law.target), ("q", law.draft), ("min(p, q)", law.accept), ("(p − q)+", law.residual))
    }
    size = len(law.target)
    tokens = sorted(sorted(range(size), key=lambda t: (-max(values["p"][t], values["q"][t]), t))[:TOP_TOKENS])
    return _token_bars(
        {_SERIES[name]: (name, column) for name, column in values.items()},
        tokens,
        path,
        labels=labels,
        log=log,
        title=title,
        xlabel=f"token ({len(tokens)} of V = {size}: the largest max(p, q))",
    )


def _token_bars(
    series: Mapping[str, tuple[str, list[Fraction]]],
    tokens: list[int],
    path: str | Path,
    *,
    labels: Mapping[int, str] | None,
    log: bool,
    title: str,
    xlabel: str,
) -> Path:
    """Grouped bars, one group per token of ``tokens`` and one bar per series ``{gid: (legend,
    values by token id)}``, each bar's SVG id ``bar-GID-TOKEN``; write SVG to ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 3))
    width = 0.8 / len(series)
    for k, (gid, (name, column)) in enumerate(series.items()):
        bars = ax.bar(
            [i + (k - (len(series) - 1) / 2) * width for i in range(len(tokens))],
            [float(column[t]) for t in tokens],
            width,
            label=name,
        )
        for t, rect in zip(tokens, bars):  # SVG ids name each bar: "bar-p-17", "bar-residual-3", ...
            rect.set_gid(f"bar-{gid}-{t}")
    ax.set_xticks(range(len(tokens)))
    ax.set_xticklabels([_literal((labels or {}).get(t, str(t))) for t in tokens], rotation=60, ha="right")
    if log:
        ax.set_yscale("log")
    ax.set_ylabel("probability")
    ax.set_xlabel(xlabel)
    ax.set_title(_literal(title))
    ax.legend(loc="upper right")
    try:
        return _save(fig, Path(path))
    finally:
        plt.close(fig)


def outcome_figure(facts: Mapping[str, Any], path: str | Path, *, log: bool = False, title: str = "") -> Path:
    """Draw a checked outcome certificate's emitted law beside its reference law; write SVG.

    Parameters
    ----------
    facts : mapping
        One entry of a valid verdict's ``facts`` for an outcome certificate.
    path : str or Path
    log : bool, optional
    title : str, optional

    Returns
    -------
    Path

    Raises
    ------
    KeyError
        If ``facts`` is not an outcome certificate's.
    ModuleNotFoundError
        Without matplotlib.

    Notes
    -----
    The tokens shown are the :data:`TOP_TOKENS` with the largest |emitted - reference|, then the
    largest mass, in token order.
    """
    values = {
        name: [Fraction(x.num, x.den) for x in facts[key]]
        for name, key in (("reference", "reference"), ("emitted", "law"))
    }
    size = len(values["reference"])
    tokens = sorted(
        sorted(
            range(size), key=lambda t: (-abs(values["emitted"][t] - values["reference"][t]), -values["reference"][t], t)
        )[:TOP_TOKENS]
    )
    return _token_bars(
        {name: (name, column) for name, column in values.items()},
        tokens,
        path,
        labels=None,
        log=log,
        title=title,
        xlabel=f"token ({len(tokens)} of V = {size}: the largest differences)",
    )


def _geometric(alpha: Fraction, gamma: int) -> list[Fraction]:
    """Eq. 1's law of the number of accepted drafts at a constant alpha."""
    return [alpha**k * (1 - alpha) for k in range(gamma)] + [alpha**gamma]


def chain_figure(facts: Mapping[str, Any], path: str | Path, *, title: str = "") -> Path:
    """Draw a checked chain's exact accepted-length law beside Eq. 1's geometric law; write SVG.

    Parameters
    ----------
    facts : mapping
        One entry of a valid verdict's ``facts`` for a chain certificate (Eq. 1 drawn beside it)
        or a block certificate (the exact law alone).
    path : str or Path
        Where to write the SVG.
    title : str, optional

    Returns
    -------
    Path
        ``path``.

    Raises
    ------
    KeyError
        If ``facts`` is not a chain certificate's.
    ModuleNotFoundError
        Without matplotlib.
    """
    gamma = facts["gamma"]
    exact = [float(Fraction(x.num, x.den)) for x in facts["accepted_length"]]
    mean = facts.get("mean_alpha")  # a block certificate has none: its law alone is drawn
    alpha = float(Fraction(mean.num, mean.den)) if mean is not None and gamma <= 64 else None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 3))
    ks = list(range(gamma + 1))
    for k, rect in enumerate(ax.bar([k - 0.2 for k in ks], exact, 0.4, label="exact law (checked)")):
        rect.set_gid(f"bar-exact-{k}")
    if alpha is not None:
        eq1 = ax.bar(
            [k + 0.2 for k in ks],
            [float(x) for x in _geometric(Fraction(alpha), gamma)],
            0.4,
            label=f"Eq. 1 at mean alpha = {alpha:.4f}",
        )
        for k, rect in enumerate(eq1):
            rect.set_gid(f"bar-eq1-{k}")
    ax.set_xticks(ks)
    ax.set_xlabel("accepted drafts")
    ax.set_ylabel("probability")
    ax.set_title(_literal(title))
    ax.legend()
    try:
        return _save(fig, Path(path))
    finally:
        plt.close(fig)


def figures_for(
    document: Mapping[str, Any],
    facts: Sequence[Mapping[str, Any]],
    stem: str | Path,
    *,
    log: bool = False,
    limit: int = 8,
) -> list[tuple[str, str]]:
    """Write one SVG per certificate (the first ``limit``) beside ``stem``: ``STEM-0.svg``, ...

    Returns
    -------
    list of (caption, file name)
        For :func:`specproof.report.transcript.render`'s ``figures``.
    """
    stem = Path(stem)
    certs = document["certificates"] if "certificates" in document else [document]
    out = []
    for i, (cert, fact) in enumerate(list(zip(certs, facts))[:limit]):
        name = str(cert.get("name", i))
        path = stem.with_name(f"{stem.name}-{i}.svg")
        if fact.get("schema") == "specproof.outcome-certificate/1":
            outcome_figure(fact, path, log=log, title=name)
            caption = f"{name}: the emitted law beside the reference law (the tokens that differ most)"
        elif fact.get("schema") == "specproof.block-certificate/1":
            chain_figure(fact, path, title=name)
            caption = f"{name}: the exact law of the number of accepted drafts"
        elif "law" in fact:
            labels = {r["token"]: r["label"] for r in cert.get("rows", []) if isinstance(r, Mapping) and "label" in r}
            pair_figure(fact, path, labels=labels, log=log, title=name)
            caption = f"{name}: p, q, min(p, q) and (p − q)+ over the tokens with the most mass"
        else:
            chain_figure(fact, path, title=name)
            caption = f"{name}: the exact law of the number of accepted drafts beside Eq. 1's"
        out.append((caption, path.name))
    return out
