"""Certify (untrusted): build the documents the trusted checker re-verifies.

:mod:`~specproof.certify.certificate` (certificates of every kind),
:mod:`~specproof.certify.crosscheck` (the float path against the exact law),
:mod:`~specproof.certify.symbolic_proof` (the SymPy proof for every V),
:mod:`~specproof.certify.variants_proof` (outcome-tree and block documents),
:mod:`~specproof.certify.coq` (a textbook certificate as a Coq file, proved by computation in Coq).
The trusted checker itself is :mod:`specproof.checker`.
"""
