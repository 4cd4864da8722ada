"""Reports: what a person reads, rendered only from what the checker re-derived.

:mod:`~specproof.report.transcript` (Markdown transcripts from Jinja2 templates in
``templates/``), :mod:`~specproof.report.plots` (figures, matplotlib),
:mod:`~specproof.report.latex` (LaTeX export).
"""
