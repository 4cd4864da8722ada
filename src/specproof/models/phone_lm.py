"""A real n-gram language model: the CMU Sphinx English phone trigram model.

The model file ``model/en-us/en-us-phone.lm.bin`` ships inside the PyPI package
``pocketsphinx``. It is queried only through pocketsphinx's own n-gram API
(``NGramModel(Config(), LogMath(), path)``, then ``prob([word, h1, h2])``, word first and the
history most recent first), which returns an integer log probability in base 1.0001. The
vocabulary is the model's unigram list (read from the model written once as ARPA) without
``<s>`` and ``<UNK>``: 41 symbols, ``</s>`` and ``SIL`` included.

Target: the trigram P(. | h2, h1). Drafts: the bigram P(. | h1) and the unigram P(.).
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import tempfile
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["PACKAGE", "MODEL_FILE", "LOG_BASE", "model_path", "vocabulary", "logprobs", "provenance"]

PACKAGE = "pocketsphinx"
MODEL_FILE = "model/en-us/en-us-phone.lm.bin"
#: pocketsphinx's integer log probabilities are in base 1.0001 (its LogMath default).
LOG_BASE = 1.0001
_DROPPED = ("<s>", "<UNK>")


def model_path() -> Path:
    """Path of the phone model inside the installed pocketsphinx package (not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pocketsphinx is not installed: pip install 'specproof[models]'")
    return Path(list(spec.submodule_search_locations)[0]) / MODEL_FILE


@lru_cache(maxsize=1)
def _model() -> Any:
    from pocketsphinx import Config, LogMath, NGramModel  # heavy import, only here

    config = Config()
    config["logfn"] = "/dev/null"  # pocketsphinx logs INFO lines to stderr otherwise
    return NGramModel(config, LogMath(), str(model_path()))


@lru_cache(maxsize=1)
def vocabulary() -> tuple[str, ...]:
    """The 41 phone symbols, in the model's unigram order (``<s>`` and ``<UNK>`` dropped)."""
    from pocketsphinx import NGramModel

    with tempfile.TemporaryDirectory() as tmp:
        arpa = Path(tmp) / "phone.arpa"
        _model().write(str(arpa), NGramModel.str_to_type("arpa"))
        text = arpa.read_text(encoding="utf-8")
    block = text.split("\\1-grams:", 1)[1].split("\\2-grams:", 1)[0]
    words = [line.split()[1] for line in block.strip().splitlines() if line.strip()]
    return tuple(w for w in words if w not in _DROPPED)


def logprobs(history: Sequence[str]) -> list[int]:
    """Integer log probabilities (base 1.0001) of every vocabulary symbol after ``history``.

    Parameters
    ----------
    history : sequence of str
        Oldest first: ``()`` for the unigram, ``(h1,)`` for the bigram P(. | h1),
        ``(h2, h1)`` for the trigram P(. | h2, h1).

    Returns
    -------
    list of int
        One entry per symbol of :func:`vocabulary`.
    """
    lm = _model()
    newest_first = list(reversed(history))
    return [int(lm.prob([word, *newest_first])) for word in vocabulary()]


def provenance() -> dict[str, str]:
    """Package name and version, model file and its sha256."""
    path = model_path()
    return {
        "package": PACKAGE,
        "version": importlib.metadata.version(PACKAGE),
        "model_file": MODEL_FILE,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "api": "NGramModel(Config(), LogMath(), path).prob([word, h1, h2])",
    }
