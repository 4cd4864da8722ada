"""Exact acceptance along a corpus, and an engine's own counters checked against it.

- :mod:`.job`: the exact per-position work (alpha, bounds on E[emitted] per gamma);
- :mod:`.sources`: the rows (the phone trigram model; a transformers target/draft pair);
- :mod:`.pipeline`: the stages, in process; :mod:`.ray`: the same stages on Ray Data;
- :mod:`.summary`: means, Eq. 1 comparison, best gamma, plots;
- :mod:`.log`: the engine-log format and the counter check;
- :mod:`.cli`: ``specproof corpus``.

Importing this package imports neither pyarrow nor Ray nor torch (extra ``corpus``).
"""
