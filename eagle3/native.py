"""The lean decoder layer's C++ twin (eagle3/csrc/decoder_layer.cpp), built once per machine.

    ops = layer_ops()    # the built module, or None where it cannot be built

torch.utils.cpp_extension builds it on first use (a C++ compiler and ninja; a few tens of
seconds on 2 cores) into its cache, TORCH_EXTENSIONS_DIR (by default
~/.cache/torch_extensions), and later processes load it from there. Where it cannot be
built, `layer_ops` says once on stderr why, and eagle3.decoder_layer runs the Python layer:
the same bits, slower. EAGLE3_NATIVE=0 leaves it unbuilt and unused.
"""

from __future__ import annotations

import functools
import os
import re
import sys

import torch

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "csrc", "decoder_layer.cpp")
# One build per torch version: the cache's folder is named by the module, and a module
# built against another torch's headers must not be loaded.
NAME = "eagle3_decoder_layer_" + re.sub(r"\W", "_", torch.__version__)


@functools.cache
def layer_ops():
    """The C++ decoder layer (attention_inputs, layer_output), or None."""
    if os.environ.get("EAGLE3_NATIVE", "1") == "0":
        return None
    try:
        from torch.utils.cpp_extension import load

        return load(NAME, [SOURCE], extra_cflags=["-O2"], verbose=False)
    except (ImportError, OSError, RuntimeError) as error:  # no compiler, no ninja, a failed build
        reason = (str(error).strip().splitlines() or [type(error).__name__])[0]
        print(f"eagle3: the C++ decoder layer was not built ({reason}); decoding runs the Python layer "
              "(the same bits, slower)", file=sys.stderr)
        return None
