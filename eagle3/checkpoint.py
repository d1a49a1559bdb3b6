"""Read and write EAGLE-3 heads in the format the ecosystem publishes.

A head is a directory with config.json and model.safetensors (older heads:
pytorch_model.bin, read with weights_only=True, never plain pickle). Keys follow the
reference repo and SpecForge (`fc.weight`, `midlayer.*`, `norm.weight`, `lm_head.weight`,
`d2t`, `t2d`, optional `embed_tokens.weight`); vLLM's `layers.0.*` spelling is read too.
Anything that does not fit is refused here, naming the field and both values.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from eagle3.head import Eagle3Config, Eagle3Head
from eagle3.invariant import prepack_linears
from eagle3.target import Target, default_aux_layers, draft_dtype, names_a_path, resolve_dtype

def project_root() -> str:
    """Where checkpoints/ and assets/ are: the checkout this package sits in (a clone, or an
    editable install), else $EAGLE3_HOME, else the current directory."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    for root in (here, os.environ.get("EAGLE3_HOME"), os.getcwd()):
        if root and os.path.isdir(os.path.join(root, "checkpoints")):
            return os.path.abspath(root)
    return here


ROOT = project_root()
EMBEDDED_TARGET = os.path.join(ROOT, "checkpoints", "target")  # the pair the project trains and ships
EMBEDDED_HEAD = os.path.join(ROOT, "checkpoints", "head")
CONFIG_NAME, SAFETENSORS_NAME, BIN_NAME = "config.json", "model.safetensors", "pytorch_model.bin"
IGNORED_KEYS = ("midlayer.self_attn.rotary_emb.inv_freq",)


def shown_path(path: str) -> str:
    """`path` relative to the project root where it lies inside it (a report names
    checkpoints/smollm2, not this machine's folders); any other path or hub id as given."""
    inside = os.path.relpath(os.path.abspath(path), ROOT)
    return inside if os.path.exists(path) and not inside.startswith("..") else path


def expected_shapes(config: Eagle3Config) -> dict[str, tuple[int, ...]]:
    """Every tensor a head must have (besides optional embed_tokens / d2t / t2d)."""
    hidden, heads, kv_heads, head_dim = (
        config.hidden_size, config.num_attention_heads, config.num_key_value_heads, config.head_dim,
    )
    fc_norm = {f"fc_norm.{i}.weight": (config.target_hidden_size,) for i in range(3)} if config.fc_norm else {}
    return fc_norm | {
        "fc.weight": (hidden, 3 * config.target_hidden_size),
        "midlayer.hidden_norm.weight": (hidden,),
        "midlayer.input_layernorm.weight": (hidden,),
        "midlayer.post_attention_layernorm.weight": (hidden,),
        "midlayer.self_attn.q_proj.weight": (heads * head_dim, 2 * hidden),
        "midlayer.self_attn.k_proj.weight": (kv_heads * head_dim, 2 * hidden),
        "midlayer.self_attn.v_proj.weight": (kv_heads * head_dim, 2 * hidden),
        "midlayer.self_attn.o_proj.weight": (hidden, heads * head_dim),
        "midlayer.mlp.gate_proj.weight": (config.intermediate_size, hidden),
        "midlayer.mlp.up_proj.weight": (config.intermediate_size, hidden),
        "midlayer.mlp.down_proj.weight": (hidden, config.intermediate_size),
        "norm.weight": (hidden,),
        "lm_head.weight": (config.draft_vocab_size, hidden),
    }


def _canonical_key(key: str) -> str:
    for prefix in ("model.", "module."):
        if key.startswith(prefix):
            key = key[len(prefix):]
    if key.startswith("layers.0."):
        key = "midlayer." + key[len("layers.0."):]
    return key


def read_config(path: str) -> Eagle3Config:
    config_path = os.path.join(path, CONFIG_NAME)
    if not os.path.isfile(config_path):
        raise FileNotFoundError(f"head: no {CONFIG_NAME} in '{path}'")
    try:
        with open(config_path, encoding="utf-8") as f:
            raw = json.load(f)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"head: {config_path} is not valid JSON ({error})") from error
    return Eagle3Config.from_dict(raw)


def read_state_dict(path: str) -> dict[str, torch.Tensor]:
    """The head's tensors under their canonical names."""
    safetensors_path, bin_path = os.path.join(path, SAFETENSORS_NAME), os.path.join(path, BIN_NAME)
    try:
        if os.path.isfile(safetensors_path):
            tensors = load_file(safetensors_path)
        elif os.path.isfile(bin_path):
            tensors = torch.load(bin_path, map_location="cpu", weights_only=True)
        else:
            raise FileNotFoundError(f"head: neither {SAFETENSORS_NAME} nor {BIN_NAME} in '{path}'")
    except pickle.UnpicklingError as error:
        raise ValueError(f"head: {BIN_NAME} in '{path}' holds more than tensors; refused (only weights are loaded)") from error
    except (SafetensorError, RuntimeError, EOFError, OSError) as error:
        if isinstance(error, FileNotFoundError):
            raise
        raise ValueError(f"head: the weights in '{path}' are truncated or corrupt ({error})") from error
    if not isinstance(tensors, dict) or not all(isinstance(v, torch.Tensor) for v in tensors.values()):
        raise ValueError(f"head: the weights in '{path}' are not a flat dict of tensors")
    return {_canonical_key(k): v for k, v in tensors.items() if _canonical_key(k) not in IGNORED_KEYS}


def check_state_dict(config: Eagle3Config, tensors: dict[str, torch.Tensor]) -> None:
    """Refuse missing, unexpected or mis-shaped tensors, naming each."""
    expected = expected_shapes(config)
    expected["embed_tokens.weight"] = (config.vocab_size, config.hidden_size)
    expected["d2t"] = (config.draft_vocab_size,)
    expected["t2d"] = (config.vocab_size,)
    optional = {"embed_tokens.weight"}
    if config.draft_vocab_size == config.vocab_size:
        optional |= {"d2t", "t2d"}
    missing = [k for k in expected if k not in tensors and k not in optional]
    if missing:
        raise ValueError(f"head: missing key(s) {', '.join(missing)} in the checkpoint")
    unexpected = [k for k in tensors if k not in expected]
    if unexpected:
        raise ValueError(f"head: unexpected key(s) {', '.join(unexpected)} in the checkpoint")
    for key, tensor in tensors.items():
        if tuple(tensor.shape) != expected[key]:
            raise ValueError(
                f"{key}: shape {list(tensor.shape)} in the checkpoint, {list(expected[key])} expected from config.json"
            )
    if "d2t" in tensors:
        target_ids = torch.arange(config.draft_vocab_size) + tensors["d2t"].long()
        if target_ids.min() < 0 or target_ids.max() >= config.vocab_size:
            raise ValueError(f"d2t: maps draft ids outside the target vocabulary [0, {config.vocab_size})")


def check_fits_target(config: Eagle3Config, target: Target, has_own_embedding: bool) -> None:
    """Refuse a head that was made for another target, naming the field and both values."""
    pairs = [("vocab_size", config.vocab_size, target.vocab_size),
             ("target_hidden_size", config.target_hidden_size, target.hidden_size)]
    if not has_own_embedding:
        pairs.append(("hidden_size (no embed_tokens in the head, so the target's are used)",
                      config.hidden_size, target.hidden_size))
    for name, head_value, target_value in pairs:
        if head_value != target_value:
            raise ValueError(f"{name}: the head has {head_value}, the target has {target_value}")
    if config.aux_layer_ids is not None and not all(0 <= i < target.num_layers for i in config.aux_layer_ids):
        raise ValueError(
            f"eagle_aux_hidden_state_layer_ids: {list(config.aux_layer_ids)} do not fit the target's "
            f"{target.num_layers} layers (valid: 0..{target.num_layers - 1})"
        )


def local_head_dir(path: str) -> str:
    """A head directory: `path` itself, or a hub snapshot where a network is allowed."""
    path = os.path.expanduser(path)
    if os.path.isdir(path):
        return path
    if names_a_path(path) and not os.path.exists(path):
        raise FileNotFoundError(f"head: '{path}' does not exist (no such file or directory)")
    if os.environ.get("HF_HUB_OFFLINE") == "1" or names_a_path(path):
        raise FileNotFoundError(f"head: '{path}' is not a directory")
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(path, allow_patterns=["*.json", "*.safetensors", "*.bin"])
    except Exception as error:  # the hub client raises many kinds: offline, gated, missing
        raise FileNotFoundError(f"head: '{path}' is not a local directory and could not be fetched ({error})") from error


def load_head(path: str, target: Target | None = None, dtype: str | torch.dtype | None = "auto",
              device: str | torch.device | None = None) -> Eagle3Head:
    """Load a head directory. With a target: check the fit, share its embeddings, use its
    device, and point its feature capture at the head's aux layers. dtype "auto" is
    bfloat16 where that is fast and the target's dtype elsewhere; None keeps the stored one."""
    path = local_head_dir(path)
    config = read_config(path)
    tensors = read_state_dict(path)
    check_state_dict(config, tensors)
    own_embedding = "embed_tokens.weight" in tensors
    if target is not None:
        check_fits_target(config, target, own_embedding)
    head = Eagle3Head(config, target.input_embeddings if target is not None else None, own_embedding)
    head.load_state_dict(tensors, strict=False)  # d2t / t2d may be absent: identity buffers stay
    if device is None:
        device = target.device if target is not None else "cpu"
    if dtype is None:
        dtype = tensors["fc.weight"].dtype
    elif target is not None:
        dtype = draft_dtype(dtype, target.dtype, target.device)
    else:
        dtype = resolve_dtype(dtype, torch.device(device))
    head.to(device=device, dtype=dtype).eval()
    prepack_linears(head)  # a bfloat16 or float32 head on a CPU multiplies on oneDNN-prepacked weights
    if target is not None:
        target.set_aux_layers(config.aux_layer_ids or default_aux_layers(target.num_layers))
    return head


def save_head(head: Eagle3Head, path: str, dtype: torch.dtype | None = None) -> None:
    """Write config.json and model.safetensors in the published format; floating-point
    tensors in dtype (default: the head's own)."""
    config, tensors = head_files(head, dtype)
    write_head(path, config, tensors)


def head_files(head: Eagle3Head, dtype: torch.dtype | None = None) -> tuple[dict, dict[str, torch.Tensor]]:
    """The head's config.json fields and tensors, floating-point ones in dtype (default: its own)."""
    dtype = dtype or head.fc.weight.dtype
    config = dataclasses.replace(head.config, torch_dtype=str(dtype).removeprefix("torch."))  # the head's own stays
    tensors = {k: (v.to(dtype) if v.is_floating_point() else v).detach().contiguous().cpu()
               for k, v in head.state_dict().items()}
    return config.to_dict(), tensors


def write_head(path: str, config: dict, tensors: dict[str, torch.Tensor]) -> None:
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, CONFIG_NAME), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    save_file(tensors, os.path.join(path, SAFETENSORS_NAME), metadata={"format": "pt"})
