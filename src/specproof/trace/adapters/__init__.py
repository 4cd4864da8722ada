"""Adapters that point specproof at real libraries' samplers (each imports its library lazily).

:mod:`specproof.trace.adapters.transformers` traces Hugging Face transformers' speculative verifier.
Importing :mod:`specproof` never imports an adapter.
"""
