"""The lean decoder layer's C++ twin (eagle3/csrc/decoder_layer.cpp) and the attention it
calls (eagle3/csrc/attention.cpp), built once per machine.

    ops = layer_ops()    # the built module, or None where it cannot be built

torch.utils.cpp_extension builds it on first use (a C++ compiler and ninja; a few tens of
seconds on 2 cores) into its cache, TORCH_EXTENSIONS_DIR (by default
~/.cache/torch_extensions), and later processes load it from there. Where it cannot be
built, `layer_ops` says once on stderr why, and eagle3.decoder_layer runs the Python layer
with eagle3.invariant's float64 attention: as exact, slower. EAGLE3_NATIVE=0 leaves it unbuilt
and unused.
"""

from __future__ import annotations

import functools
import os
import re
import sys

import torch

SOURCES = [os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc", name)
           for name in ("decoder_layer.cpp", "attention.cpp")]
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

        return load(NAME, SOURCES, extra_cflags=["-O3", "-fopenmp", *CPU_FLAGS.get(CAPABILITY, [])],
                    extra_ldflags=["-fopenmp"], verbose=False)
    except (ImportError, OSError, RuntimeError) as error:  # no compiler, no ninja, a failed build
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(f"eagle3: the C++ decoder layer was not built ({reason}); decoding runs the Python layer "
              "and float64 attention (as exact, slower)", file=sys.stderr)
        return None
