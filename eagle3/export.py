"""Write an EAGLE-3 head in the layout a serving engine loads.

    python -m eagle3.export --to vllm --head checkpoints/head --out runs/head-vllm
    python -m eagle3.export --to sglang --head checkpoints/head --out runs/head-sglang

Both engines load a one-layer Llama config with `"architectures": ["LlamaForCausalLMEagle3"]`,
an explicit `draft_vocab_size` and `target_hidden_size`, `lm_head.weight` of the draft
vocabulary and `d2t` as offsets (target id = draft id + d2t[draft id]). They differ in
  - the decoder layer's key names: vLLM's own are `layers.0.*` (it also renames
    `midlayer.*`); SGLang reads `midlayer.*` and silently drops anything else;
  - where they read the aux (feature) layers, one layer apart: vLLM a top-level
    `eagle_aux_hidden_state_layer_ids`, the INPUTS of those layers; SGLang
    `eagle_config.eagle_aux_hidden_state_layer_ids`, the OUTPUTS (it adds 1).
A head on the default layers (2, L // 2, L - 3), which both engines and this project
assume when none are named, is written without ids. When the draft vocabulary is the
whole vocabulary, vLLM has no `d2t` parameter (it refuses the file), so its export leaves
the maps out; SGLang reads them either way.

An EAGLE 3.1 head (`fc_norm`, `norm_output` in config.json; eagle3.head) keeps its
`fc_norm.{0,1,2}.weight` at the top level, like `fc.weight`, where both engines look for
them: vLLM from its EAGLE 3.1 support on (PR 42764; PR 46488 for the speculators format),
SGLang from PR 24663 (May 2026). An older SGLang drops those weights without a word and
drafts badly, so serve such a head with a recent one.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass

from eagle3.checkpoint import head_files, load_head, write_head
from eagle3.head import aux_layers_to_config
from eagle3.target import DTYPES


@dataclass(frozen=True)
class Engine:
    name: str
    layer_prefix: str  # how the one decoder layer's keys begin
    aux_key: str  # "top": vLLM's top-level list of layer inputs; "nested": SGLang's eagle_config, layer outputs
    serve: str  # the command that serves the exported head, with {target} and {head}
    maps_with_full_vocab: bool = True  # whether d2t / t2d may be written when the draft vocabulary is the whole one


ENGINES = {
    "vllm": Engine("vllm", "layers.0.", "top",
                   "vllm serve {target} --speculative-config "
                   "'{{\"method\": \"eagle3\", \"model\": \"{head}\", \"num_speculative_tokens\": 5}}'",
                   maps_with_full_vocab=False),
    "sglang": Engine("sglang", "midlayer.", "nested",
                     "python -m sglang.launch_server --model-path {target} --speculative-algorithm EAGLE3 "
                     "--speculative-draft-model-path {head} --speculative-num-steps 5 --speculative-eagle-topk 4 "
                     "--speculative-num-draft-tokens 8"),
}


def export_config(raw: dict, aux: tuple[int, int, int] | None, engine: Engine) -> dict:
    """config.json for `engine`: our fields, with the aux layers in that engine's place and convention."""
    raw = {k: v for k, v in raw.items() if k not in ("eagle_config", "eagle_aux_hidden_state_layer_ids")}
    raw["architectures"] = ["LlamaForCausalLMEagle3"]  # the one name both engines register
    fields = aux_layers_to_config(aux)
    if engine.aux_key == "top":
        fields.pop("eagle_config", None)
    else:
        if aux is not None and min(aux) < 1:
            raise ValueError(f"aux layer ids: {list(aux)} include the embeddings (0), which SGLang cannot capture")
        fields.pop("eagle_aux_hidden_state_layer_ids", None)
    raw.update(fields)
    return raw


def engine_key(key: str, engine: Engine) -> str:
    """A tensor name in the engine's spelling: the decoder layer's keys take its prefix."""
    return engine.layer_prefix + key.removeprefix("midlayer.") if key.startswith("midlayer.") else key


def export_head(head_dir: str, engine_name: str, out: str, dtype: str | None = None) -> dict:
    """Write `head_dir` for the engine into `out`; the config written."""
    if engine_name not in ENGINES:
        raise ValueError(f"engine: {engine_name!r} is not one of {', '.join(ENGINES)}")
    engine = ENGINES[engine_name]
    head = load_head(head_dir, None, dtype=None)
    config, tensors = head_files(head, DTYPES[dtype] if dtype else None)
    config = export_config(config, head.config.aux_layer_ids, engine)
    if head.config.draft_vocab_size == head.config.vocab_size and not engine.maps_with_full_vocab:
        tensors = {key: value for key, value in tensors.items() if key not in ("d2t", "t2d")}
    write_head(out, config, {engine_key(key, engine): value for key, value in tensors.items()})
    return config


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m eagle3.export", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--to", required=True, choices=sorted(ENGINES), help="the serving engine")
    parser.add_argument("--head", required=True, help="a head directory in this project's (the published) format")
    parser.add_argument("--out", required=True, help="directory to write config.json and model.safetensors into")
    parser.add_argument("--dtype", default=None, choices=sorted(DTYPES), help="weights dtype (default: as stored)")
    parser.add_argument("--target", default="TARGET", help="the target's hub id or path, for the printed command")
    args = parser.parse_args(argv)
    try:
        export_head(args.head, args.to, args.out, args.dtype)
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    print(f"wrote the head for {args.to} to {args.out}; serve it with\n  "
          + ENGINES[args.to].serve.format(target=args.target, head=os.path.abspath(args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
