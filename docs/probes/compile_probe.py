"""--compile against eager on the real target: plain greedy decoding, 64 tokens, three runs each.

    PYTHONPATH=. python docs/probes/compile_probe.py [--freezing] [--dtype float32]
    TORCH_LOGS=recompiles PYTHONPATH=. python docs/probes/compile_probe.py   # what dynamo recompiles

Prints tokens/s per run (the first compiled run pays the compilation) and whether the compiled
layers give the eager tokens. --freezing sets inductor's freezing (weights as constants,
prepacked for oneDNN by inductor itself). --dtype float32 runs the target as `auto` does on a
CPU without exact bfloat16 (default: bfloat16).
"""

import sys
import time

import torch

from eagle3 import GenerationConfig, collect, decode
from eagle3.compiled import compile_decoding
from eagle3.target import load_target

NEW_TOKENS = 64


def timed_runs(target, prompt: list[int], label: str) -> list[int]:
    for i in range(3):
        started = time.perf_counter()
        output = collect(decode(target, prompt, None, GenerationConfig(NEW_TOKENS))).output_ids
        print(f"{label} run {i}: {NEW_TOKENS / (time.perf_counter() - started):.1f} tokens/s", flush=True)
    return output


def main() -> None:
    dtype = sys.argv[sys.argv.index("--dtype") + 1] if "--dtype" in sys.argv else "bfloat16"
    target = load_target("checkpoints/smollm2", "cpu", dtype)
    prompt = target.tokenizer("Explain how a hash map works.")["input_ids"]
    eager = timed_runs(target, prompt, "eager")
    torch._inductor.config.freezing = "--freezing" in sys.argv
    compile_decoding(target)
    print("compiled tokens equal eager ones:", timed_runs(target, prompt, "compiled") == eager)


if __name__ == "__main__":
    main()
