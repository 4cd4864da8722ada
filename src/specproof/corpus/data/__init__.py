"""Package data of specproof corpus: the default text and the recorded engine logs.

- ``default.txt``: a short English text written for specproof (four paragraphs, 175 words);
- ``transformers-genuine.parquet``: transformers' assisted generation (SmolLM2-135M target, its
  3-bit copy as assistant, sampling, gamma = 4), recorded by ``python -m specproof.corpus.log``;
- ``transformers-counting-bug.parquet``: the same with one accepted token too many in every 20th
  step whose count is below gamma;
- ``transformers-le-coin3.parquet``: transformers' verifier (its ``<=`` comparison) fed a 3-bit coin.

Each log's Parquet metadata records how it was made.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def path(name: str) -> Path:
    """The path of a data file shipped in this package."""
    return Path(str(resources.files(__package__).joinpath(name)))
