"""The lean decoder layer's C++ twin (eagle3/csrc/decoder_layer.cpp), the attention it
calls (eagle3/csrc/attention.cpp), bfloat16 and float32 products (eagle3/csrc/product.cpp), the
greedy verdict's argmax (eagle3/csrc/argmax.cpp) and a draft level's choice of children
(eagle3/csrc/top_children.cpp), built once per machine; and what this CPU has.

    ops = layer_ops()         # the built module, or None where it cannot be built
    ops = own_products(dtype) # the same module where its product multiplies dtype here, else None
    tokens = argmax(logits)   # torch.argmax(logits, -1), in C++ where it can be

torch.utils.cpp_extension builds it on first use (a C++ compiler and ninja; a few tens of
seconds on 2 cores) into its cache, TORCH_EXTENSIONS_DIR (by default
~/.cache/torch_extensions), and later processes load it from there. Where it cannot be
built, `layer_ops` says once on stderr why, and eagle3.decoder_layer runs the Python layer
with eagle3.invariant's float64 attention: as exact, slower. EAGLE3_NATIVE=0 leaves it unbuilt
and unused.

The C++ product multiplies every bfloat16 and float32 product (the target's, the head's)
where the CPU has AVX2 and FMA: bfloat16 by AMX's tiles where it has AMX, by vdpbf16ps where
it has AVX-512 BF16, else by fused multiply-adds on weights widened to float32. oneDNN has no
bfloat16 on an AVX2 CPU, its one-row and many-row bfloat16 products round differently (row
limits), and its and MKL's float32 products of a few rows cost about as many one-row ones.
EAGLE3_PRODUCT=onednn overrides that choice (for measuring one against the other).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys

import torch

CSRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc")
SOURCES = [os.path.join(CSRC, name)
           for name in ("decoder_layer.cpp", "attention.cpp", "product.cpp", "argmax.cpp", "top_children.cpp")]
HEADERS = [os.path.join(CSRC, "lanes.h")]
# The vector instructions the attention's loops are compiled for: those ATen itself runs on
# this CPU. Its sums keep their order whatever the vector width (attention.cpp).
CPU_FLAGS = {"AVX512": ["-mavx512f", "-mavx512bw", "-mavx512vl", "-mavx512dq", "-mavx2", "-mfma",
                        "-mprefer-vector-width=512"],
             "AVX2": ["-mavx2", "-mfma"]}
# One build per torch version and instruction set: the cache's folder is named by the module,
# and a module built against another torch's headers, or for another CPU, must not be loaded.
CAPABILITY = torch.backends.cpu.get_cpu_capability()
NAME = "eagle3_native_" + re.sub(r"\W", "_", f"{torch.__version__}_{CAPABILITY}")


@functools.cache
def layer_ops():
    """The C++ decoder layer (attention_inputs, layer_output, attention), or None."""
    if os.environ.get("EAGLE3_NATIVE", "1") == "0":
        return None
    try:
        from torch.utils.cpp_extension import load

        return load(NAME, SOURCES, extra_cflags=["-O3", "-fopenmp", *CPU_FLAGS.get(CAPABILITY, []), headers_flag()],
                    extra_ldflags=["-fopenmp"], verbose=False)
    except (ImportError, OSError, RuntimeError) as error:  # no compiler, no ninja, a failed build
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(f"eagle3: the C++ decoder layer was not built ({reason}); decoding runs the Python layer "
              "and float64 attention (as exact, slower)", file=sys.stderr)
        return None


def headers_flag() -> str:
    """A define naming the headers' digest: torch rebuilds a module when its sources or its
    flags change, not when a header they include does."""
    digest = hashlib.sha256()
    for path in HEADERS:
        with open(path, "rb") as f:
            digest.update(f.read())
    return f"-DEAGLE3_HEADERS={digest.hexdigest()[:16]}"


def cpu_bf16_kind() -> str | None:
    """The CPU's bfloat16 instructions by /proc/cpuinfo's flags: "AMX", "AVX-512 BF16", or None."""
    flags = cpu_flags()
    return "AMX" if "amx_bf16" in flags else "AVX-512 BF16" if "avx512_bf16" in flags else None


@functools.cache
def cpu_info() -> str:
    """/proc/cpuinfo's text, with its flags ("" where there is none)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return f.read()
    except OSError:
        return ""


PRODUCTS = ("auto", "cpp", "onednn")


@functools.cache
def own_products(dtype: torch.dtype):
    """The C++ module where its product (eagle3/csrc/product.cpp) multiplies this dtype's linear
    layers here: built, bfloat16 or float32, a CPU with AVX2 and FMA, and EAGLE3_PRODUCT not
    onednn; else None (oneDNN's, MKL's or ATen's product)."""
    choice = os.environ.get("EAGLE3_PRODUCT", "auto")
    if choice not in PRODUCTS:
        raise ValueError(f"EAGLE3_PRODUCT: {choice!r} is not one of {', '.join(PRODUCTS)}")
    if choice == "onednn":
        return None
    if dtype not in (torch.bfloat16, torch.float32) or not {"avx2", "fma"} <= cpu_flags():
        return None
    return layer_ops()


def cpu_flags() -> set[str]:
    """The instruction sets /proc/cpuinfo names (empty where there is none)."""
    found = re.search(r"^flags\s*:(.*)$", cpu_info(), re.MULTILINE)
    return set(found.group(1).split()) if found else set()


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """logits [..., V] -> [...] int64, torch.argmax(logits, -1) (the first of equal largest
    values, a NaN before any number): in one vectorised pass per row (eagle3/csrc/argmax.cpp)
    for float32 logits on a CPU where the module is built."""
    ops = layer_ops() if logits.device.type == "cpu" and logits.dtype == torch.float32 else None
    return logits.argmax(-1) if ops is None else ops.argmax(logits)
