"""Where the rows come from: the phone trigram model, and a transformers target/draft pair.

A source turns a text into documents (lists of token ids), runs the models on a document
(teacher-forced: one pass over the text per model, plus the explored prefixes off the text), and
says how the drafting tree's nodes are keyed (:meth:`tree`). Heavy imports (torch,
transformers, pocketsphinx's files) happen only in the methods that need them.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import InvalidDistribution
from .job import ContextNode, node_law

__all__ = ["PhoneSource", "TransformersSource", "make_source", "SOURCES"]

END = "</s>"
SIL = "SIL"


@lru_cache(maxsize=1)
def _cmudict() -> dict[str, list[str]]:
    """The CMU pronouncing dictionary shipped in pocketsphinx (read as a file, not imported)."""
    spec = importlib.util.find_spec("pocketsphinx")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("pocketsphinx is not installed: pip install 'specproof[phone]'")
    path = Path(list(spec.submodule_search_locations)[0]) / "model/en-us/cmudict-en-us.dict"
    out: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        word, *phones = line.split()
        out.setdefault(word, phones)  # the first pronunciation ("word(2)" lines are variants)
    return out


class PhoneSource:
    """The CMU Sphinx phone trigram model (target) and its bigram (draft), V = 41.

    Text becomes phones through pocketsphinx's CMU dictionary (first pronunciation; a word not
    in it is dropped and counted), with ``SIL`` at every sentence end. Each paragraph is one
    document that starts after ``SIL SIL``. Rows are the shipped fixture's tables
    (:mod:`specproof.models.fixtures`), float64 ``1.0001 ** log`` (:func:`specproof.models.portable.power`), made exact by ``from_floats``;
    after ``</s>`` both models emit ``</s>`` with probability 1 (as :func:`specproof.models.fixtures.phone_lm_chain`).
    The model is Markov in its last two symbols, so every prefix is explored: the bounds are exact
    up to the grid's rounding.
    """

    name = "phone-lm/bigram"
    start = 2  # positions before this are the start context

    def __init__(self) -> None:
        from ..models.fixtures import PHONE_ATOL, _phone_fixture

        fx = _phone_fixture()
        self.atol = PHONE_ATOL
        self.labels = tuple(fx["vocabulary"])
        self.index = {s: i for i, s in enumerate(self.labels)}
        self.end = self.index[END]
        self.dropped: list[str] = []
        # the source's own caches (functools.cache on the methods would hold every source for the process's life)
        self._row_cache: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._node_cache: dict[tuple[int, int], ContextNode] = {}

    @property
    def vocab_size(self) -> int:
        return len(self.labels)

    def documents(self, text: str) -> list[list[int]]:
        words = _cmudict()
        docs = []
        for para in [p for p in re.split(r"\n\s*\n", text) if p.strip()]:
            ids = [self.index[SIL], self.index[SIL]]
            for sentence in re.split(r"[.!?;:]+", para):
                tokens = re.findall(r"[a-z']+", sentence.lower())
                for w in tokens:
                    if w in words:
                        ids.extend(self.index[ph] for ph in words[w])
                    else:
                        self.dropped.append(w)
                if tokens and ids[-1] != self.index[SIL]:
                    ids.append(self.index[SIL])
            if len(ids) > self.start + 1:
                docs.append(ids)
        return docs

    def rows(self, state: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        """Float64 target (trigram) and draft (bigram) rows after the last two symbols ``state``
        (computed once per source)."""
        got = self._row_cache.get(state)
        if got is None:
            got = self._row_cache[state] = self._read_rows(state)
        return got

    def _read_rows(self, state: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
        from ..models.fixtures import _phone_fixture, _probabilities

        if self.end in state:
            e = np.zeros(self.vocab_size)
            e[self.end] = 1.0
            return e, e
        fx = _phone_fixture()
        base = float(fx["log_base"])
        h2, h1 = (self.labels[i] for i in state)
        p = _probabilities(fx["trigram_table"][f"{h2} {h1}"], base)
        q = _probabilities(fx["bigram_table"][h1], base)
        return p, q

    def requests(self, ids: list[int], gamma_max: int, mass_bound: float, max_explore: int) -> list[dict[str, Any]]:
        """The rows the exact stage needs for a document: one node per distinct state at its positions."""
        states = sorted({(ids[t - 2], ids[t - 1]) for t in range(self.start, len(ids))})
        out = []
        for s in states:
            p, q = self.rows(s)
            out.append({"key": f"{s[0]},{s[1]}", "p": p, "q": q, "children": None})
        return out

    def state_node(self, state: tuple[int, int]) -> ContextNode:
        """The exact :class:`ContextNode` of a state (every child kept), computed once per source (one per
        process through :func:`specproof.corpus.pipeline.source`)."""
        got = self._node_cache.get(state)
        if got is None:
            p, q = self.rows(state)
            got = self._node_cache[state] = node_law(p, q, None, atol=self.atol)
        return got

    def tree(self, ids: list[int], laws: dict[str, ContextNode]) -> tuple[Callable, Callable, Callable[[int], Any]]:
        """``(lookup, child, root_key)`` over states; the document's own laws are used for its roots."""

        def lookup(state: tuple[int, int]) -> ContextNode:
            got = laws.get(f"{state[0]},{state[1]}")
            return got if got is not None else self.state_node(state)

        def child(state: tuple[int, int], y: int) -> tuple[int, int]:
            return (state[1], y)

        return lookup, child, lambda t: (ids[t - 2], ids[t - 1])


class TransformersSource:
    """A target/draft pair of transformers causal LMs (SmolLM2-135M and its 3-bit copy by default).

    Each paragraph is one document (tokenized without special tokens); position t's context is
    the document's first t tokens (t >= 1). Rows are ``softmax(float64(logits))`` of float32
    logits. Teacher forcing gives every on-text row from one pass per model; below each position,
    the off-text prefixes are explored at any depth, largest unexplored mass first
    (:func:`~specproof.corpus.job.explore`: reach times the depth left), until their unexplored
    mass is at most ``mass_bound`` or ``max_explore`` prefixes are explored; their rows come from
    batched decoding steps on the document's cache (:meth:`_rows`). What is not explored widens
    the bounds, never silently.
    """

    start = 1

    def __init__(self, target: str = "smollm2", draft: str = "q3") -> None:
        self.target_name, self.draft_name = target, draft
        self.name = f"{target}/{draft}"
        from ..models.fixtures import SMOLLM2_ATOL

        self.atol = SMOLLM2_ATOL
        self._loaded: tuple[Any, Any, Any] | None = None
        self._tokenizer: Any = None

    def tokenizer(self) -> Any:
        """The target's tokenizer alone (the driver of a Ray run needs no model)."""
        if self._loaded is not None:
            return self._loaded[0]
        if self._tokenizer is None:
            import os

            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
            from transformers import AutoTokenizer

            if self.target_name == "smollm2":
                from ..models import smollm2

                path = smollm2.gguf_path()
                self._tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=smollm2.GGUF_NAME)
            else:
                self._tokenizer = AutoTokenizer.from_pretrained(self.target_name)
        return self._tokenizer

    def load(self) -> tuple[Any, Any, Any]:
        """(tokenizer, target model, draft model), loaded once; CPU, float32, one thread."""
        if self._loaded is None:
            if self.target_name == "smollm2":
                from ..models import smollm2

                tok, model, q3 = smollm2.load()
                if self.draft_name != "q3":
                    raise InvalidDistribution(f"the shipped SmolLM2 pair's draft is 'q3', not {self.draft_name!r}")
                self._loaded = (tok, model, q3)
            else:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer

                torch.set_num_threads(1)
                tok = AutoTokenizer.from_pretrained(self.target_name)
                t = AutoModelForCausalLM.from_pretrained(self.target_name, dtype=torch.float32).eval()
                d = AutoModelForCausalLM.from_pretrained(self.draft_name, dtype=torch.float32).eval()
                self._loaded = (tok, t, d)
        return self._loaded

    @property
    def vocab_size(self) -> int:
        return int(self.load()[1].config.vocab_size)

    def documents(self, text: str) -> list[list[int]]:
        tok = self.tokenizer()
        docs = []
        for para in [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]:
            ids = tok(para, add_special_tokens=False).input_ids
            if len(ids) > self.start + 1:
                docs.append(list(ids))
        return docs

    def _forward(self, model: Any, ids: list[int]) -> tuple[np.ndarray, Any]:
        import torch

        with torch.no_grad():
            out = model(input_ids=torch.tensor([ids]), use_cache=True)
        return out.logits[0].float().numpy(), getattr(out, "cache", None) or out.past_key_values

    #: Prefixes per batched decoding call (each holds a copy of the document's cache).
    CHUNK = 32

    @classmethod
    def _rows(cls, model: Any, cache: Any, nodes: list[tuple[int, tuple[int, ...]]]) -> list[np.ndarray]:
        """Float32 logits after ``context[:t] + path`` for each node ``(t, path)``, from the document's
        cache: one call per depth and chunk, each entry attending to the cache's first t positions
        (the rest masked) and to its own path, at positions t, t + 1, ..."""
        import copy

        import torch

        out: list[Any] = [None] * len(nodes)
        n = cache.get_seq_length()
        for depth in sorted({len(path) for _, path in nodes}):
            group = [i for i, (_, path) in enumerate(nodes) if len(path) == depth]
            for start in range(0, len(group), cls.CHUNK):
                part = group[start : start + cls.CHUNK]
                ts = torch.tensor([nodes[i][0] for i in part])
                mask = torch.cat(
                    [(torch.arange(n)[None, :] < ts[:, None]).long(), torch.ones(len(part), depth, dtype=torch.long)],
                    dim=1,
                )
                c = copy.deepcopy(cache)
                c.batch_repeat_interleave(len(part))
                with torch.no_grad():
                    logits = (
                        model(
                            input_ids=torch.tensor([list(nodes[i][1]) for i in part]),
                            attention_mask=mask,
                            position_ids=ts[:, None] + torch.arange(depth)[None, :],
                            cache=c,
                            use_cache=True,
                        )
                        .logits[:, -1]
                        .float()
                        .numpy()
                    )
                for k, i in enumerate(part):
                    out[i] = logits[k]
        return out

    def _step(self, model: Any, cache: Any, t: int, tokens: list[int]) -> np.ndarray:
        """Logits after context[:t] + [y] for each y (:meth:`_rows` at depth 1), shape [len(tokens), V]."""
        return np.stack(self._rows(model, cache, [(t, (y,)) for y in tokens]))

    def requests(self, ids: list[int], gamma_max: int, mass_bound: float, max_explore: int) -> list[dict[str, Any]]:
        """The rows of every position (teacher-forced) and of the off-text prefixes :func:`~.job.explore`
        chooses (largest unexplored mass first, at any depth), as float32 logits."""
        from ..models.smollm2 import softmax
        from .job import explore

        _, target, draft = self.load()
        pl, pc = self._forward(target, ids)
        ql, qc = self._forward(draft, ids)
        rows: dict[tuple[int, tuple[int, ...]], tuple[np.ndarray, np.ndarray]] = {}

        def mass(p_logits: np.ndarray, q_logits: np.ndarray) -> np.ndarray:
            return np.minimum(softmax(p_logits), softmax(q_logits))

        def expand(nodes: list[tuple[int, tuple[int, ...]]]) -> list[np.ndarray]:
            got = list(zip(self._rows(target, pc, nodes), self._rows(draft, qc, nodes)))
            rows.update(zip(nodes, got))
            return [mass(p, q) for p, q in got]

        roots = {
            t: (mass(pl[t - 1], ql[t - 1]), ids[t] if t < len(ids) else None) for t in range(self.start, len(ids) + 1)
        }
        chosen = explore(roots, expand, gamma_max=gamma_max, mass_bound=mass_bound, max_explore=max_explore)
        out = []
        for t in range(self.start, len(ids) + 1):
            paths = chosen[t]
            kids: dict[tuple[int, ...], list[int]] = {(): [ids[t]] if t < len(ids) else []}
            for path in paths:
                kids[path] = []
                kids[path[:-1]].append(path[-1])
            out.append({"key": str(t), "p": pl[t - 1], "q": ql[t - 1], "children": kids[()]})
            for path in paths:
                p, q = rows[(t, path)]
                out.append({"key": self.node_key(t, path), "p": p, "q": q, "children": kids[path]})
        return out

    @staticmethod
    def node_key(t: int, path: tuple[int, ...]) -> str:
        """A node's key: ``"t"`` for position t's context, ``"t:y1,y2"`` for the prefix y1 y2 after it."""
        return f"{t}:{','.join(str(y) for y in path)}" if path else str(t)

    def tree(self, ids: list[int], laws: dict[str, ContextNode]) -> tuple[Callable, Callable, Callable[[int], Any]]:
        """Keys: ``(t, ())`` a position's context, ``(t, path)`` an off-text prefix after it (explored
        if its law is in ``laws``, unknown otherwise)."""

        def lookup(key: tuple[int, tuple[int, ...]]) -> ContextNode | None:
            return laws.get(self.node_key(*key))

        def child(key: tuple[int, tuple[int, ...]], y: int) -> tuple[int, tuple[int, ...]]:
            t, path = key
            if not path and t < len(ids) and y == ids[t]:
                return (t + 1, ())
            return (t, path + (y,))

        return lookup, child, lambda t: (t, ())


def rows_to_probs(source: Any, row: np.ndarray) -> np.ndarray:
    """The float64 distribution of a request's row: logits (float32) go through softmax."""
    if row.dtype == np.float32:
        from ..models.smollm2 import softmax

        return softmax(row)
    return row


SOURCES = ("phone", "smollm2")


def make_source(name: str) -> Any:
    """``"phone"`` -> :class:`PhoneSource`; ``"smollm2"`` -> the shipped pair; ``"TARGET,DRAFT"`` -> any HF pair."""
    if name == "phone":
        return PhoneSource()
    if name == "smollm2":
        return TransformersSource()
    if "," in name:
        target, draft = (s.strip() for s in name.split(",", 1))
        return TransformersSource(target, draft)
    raise InvalidDistribution(f"unknown model pair {name!r}: use 'phone', 'smollm2' or 'TARGET,DRAFT' (names or paths)")
