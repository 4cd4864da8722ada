"""Adapters that produce real (p, q) pairs from real language models (extra ``[models]``).

Heavy imports (pocketsphinx, torch, transformers) happen only inside the adapters' functions,
never in ``import specproof``. The pairs they produce are stored as package fixtures
(:mod:`specproof.models.fixtures`), so proving them needs none of these packages.
"""
