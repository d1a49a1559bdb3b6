"""The target model: a Hugging Face causal LM that verifies draft trees and exposes the
three auxiliary hidden states an EAGLE-3 head fuses.

`hidden_states[i]` below means the residual stream entering decoder layer i (index 0 is the
token embedding), which is what `output_hidden_states` reports at index i. The default
layers are (2, L // 2, L - 3), the EAGLE-3 reference choice.
"""

from __future__ import annotations

import os
import platform
import re
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from eagle3 import transfer
from eagle3.decoder_layer import forward_kind, use_lean_layers
from eagle3.invariant import (NAME as INVARIANT_ATTENTION, cache_dtype, exact_rows, make_row_invariant,
                              prepack_linears, wants_invariant_arithmetic)
from eagle3.gguf import dequantized, find_gguf
from eagle3.kv_cache import KVCache
from eagle3.masks import in_window, layer_mask, ragged_allowed
from eagle3.native import argmax, cpu_bf16_kind, cpu_info, own_products

SUPPORTED_FAMILIES = ("llama", "qwen2", "qwen3", "mistral")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def default_aux_layers(num_layers: int) -> tuple[int, int, int]:
    """Low / mid / high feature layers of the EAGLE-3 reference for an L-layer target."""
    return (2, num_layers // 2, num_layers - 3)


def resolve_device(device: str | None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except RuntimeError as error:
        raise ValueError(f"device: '{device}' is not a torch device (use cpu, cuda, cuda:N or auto)") from error
    if resolved.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: '{device}' was asked for, but CUDA is not available on this machine")
    return resolved


def resolve_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    if isinstance(dtype, torch.dtype):
        return dtype
    if dtype in (None, "auto"):
        return torch.bfloat16 if exact_bf16(device) else torch.float32
    if dtype not in DTYPES:
        raise ValueError(f"dtype: '{dtype}' is not one of {', '.join(DTYPES)} or auto")
    return DTYPES[dtype]


def bf16_native(capability: tuple[int, int]) -> bool:
    """Whether a CUDA device of this compute capability has bfloat16 arithmetic in hardware:
    Ampere (8.0) and later. Older ones (V100 7.0, T4 7.5) emulate it, slowly, although
    torch.cuda.is_bf16_supported() says yes there."""
    return tuple(capability) >= (8, 0)


def bf16_supported(device: torch.device) -> bool:
    """Whether bfloat16 matmuls are fast here: CUDA from compute capability 8.0, or a CPU with
    AVX-512 BF16 or AMX."""
    if device.type == "cuda":
        return bf16_native(torch.cuda.get_device_capability(device))
    return torch.backends.cpu.get_cpu_capability() in ("AVX512", "AVX512_BF16", "AMX") and cpu_bf16_kind() is not None


def exact_bf16(device: torch.device) -> bool:
    """Where `auto` runs the target in bfloat16: CUDA, and CPUs whose bfloat16 linear layers
    give each row the same bits for any number of rows, so that with eagle3.invariant a
    verified tree or a batch computes what one-token steps do: by construction where the C++
    product multiplies bfloat16 (AMX, AVX-512 BF16, or AVX2 and FMA, widening the weights to
    float32 in the registers), else oneDNN's within the row limits
    eagle3.invariant.exact_rows measures. Other CPUs keep float32."""
    if device.type == "cuda":
        return bf16_supported(device)
    return own_products(torch.bfloat16) is not None or (bf16_supported(device) and exact_rows())


def training_dtype(dtype: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """A target's dtype where no exactness is needed (training, its features), and it runs
    ATen's own kernels: auto is bfloat16 where those are fast in it (bf16_supported), else
    float32 (on an AVX2 CPU ATen's bfloat16 matmul is a loop of one-row products)."""
    if dtype in (None, "auto"):
        return torch.bfloat16 if bf16_supported(device) else torch.float32
    return resolve_dtype(dtype, device)


def device_name(device: torch.device) -> str:
    """The device in words, for reports: the GPU's name, or the CPU's model with what decides
    its arithmetic here (AMX, AVX-512 BF16, else torch's CPU capability) and its core count;
    e.g. "AMD EPYC (AVX2, 2 cores)"."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = re.search(r"^model name\s*:\s*(.+)$", cpu_info(), re.MULTILINE)
    name = model.group(1).strip() if model else (platform.processor() or platform.machine())
    return f"{name} ({cpu_bf16_kind() or torch.backends.cpu.get_cpu_capability()}, {os.cpu_count()} cores)"


def draft_dtype(dtype: str | torch.dtype | None, target_dtype: torch.dtype, device: torch.device) -> torch.dtype:
    """The head's dtype. auto: bfloat16 where its matmuls are fast (the draft's numerics do not
    touch the output, which the target decides), else the target's dtype (bfloat16 too where
    the C++ product multiplies it)."""
    if dtype in (None, "auto"):
        return torch.bfloat16 if bf16_supported(device) else target_dtype
    return resolve_dtype(dtype, device)


@dataclass
class TargetOutput:
    """Result of one target forward over n new positions."""

    logits: torch.Tensor  # [B, n_kept, vocab] float32, n_kept = n or the last logits_to_keep
    features: torch.Tensor | None  # [B, n, 3 * hidden] fused low/mid/high states, when captured


class Target:
    """A Hugging Face causal LM plus what speculative decoding needs from it."""

    def __init__(self, model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase | None = None):
        """The model as it is: its arithmetic is set_arithmetic's business (load_target calls it)."""
        config = model.config
        if config.model_type not in SUPPORTED_FAMILIES:
            raise ValueError(
                f"target: model_type '{config.model_type}' is not supported "
                f"(supported families: {', '.join(SUPPORTED_FAMILIES)})"
            )
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.config = config
        self.layers = model.model.layers
        self.num_layers = config.num_hidden_layers
        self.hidden_size = config.hidden_size
        self.vocab_size = config.vocab_size
        self.max_context = config.max_position_embeddings
        self.eos_token_ids = _eos_token_ids(model, tokenizer)
        self._captured: list[torch.Tensor] | None = None
        self._hooks: list = []
        self.set_aux_layers(default_aux_layers(self.num_layers))

    @property
    def device(self) -> torch.device:
        return self.model.device

    @property
    def dtype(self) -> torch.dtype:
        return self.model.dtype

    @property
    def input_embeddings(self) -> torch.nn.Embedding:
        return self.model.get_input_embeddings()

    def set_aux_layers(self, layer_ids) -> None:
        """Capture hidden_states[i] for each i in layer_ids (the input of decoder layer i)."""
        layer_ids = tuple(int(i) for i in layer_ids)
        if len(layer_ids) != 3 or not all(0 <= i < self.num_layers for i in layer_ids):
            raise ValueError(
                f"aux layer ids: {list(layer_ids)} must be three layer indices in [0, {self.num_layers - 1}] "
                f"for this {self.num_layers}-layer target"
            )
        for hook in self._hooks:
            hook.remove()
        self.aux_layer_ids = layer_ids
        self._hooks = [self.layers[i].register_forward_pre_hook(self._capture) for i in layer_ids]

    def _capture(self, module, args):
        if self._captured is not None:
            self._captured.append(args[0])

    def new_cache(self, capacity: int) -> KVCache:
        return KVCache(self.num_layers, capacity, cache_dtype(self.model))

    @contextmanager
    def _capturing(self, enabled: bool):
        """Collect the aux hidden states of the forward run inside; yields the list."""
        self._captured = [] if enabled else None
        try:
            yield self._captured
        finally:
            self._captured = None

    @torch.inference_mode()
    def forward(
        self,
        input_ids: torch.Tensor,
        position_ids: torch.Tensor,
        cache: KVCache,
        attention_mask=None,
        logits_to_keep: int | torch.Tensor = 0,
        capture: bool = False,
    ) -> TargetOutput:
        """Run input_ids [B, n] at position_ids [B, n] on top of the cache.

        attention_mask: None for a causal step, else a 4D mask [B, 1, n, cache + n] as
        attention_mask() makes it (or a dict of them by layer type), e.g. for tree
        verification. logits_to_keep: 0 keeps all, k the last k positions, a 1D tensor those
        positions (of every row).
        """
        with self._capturing(capture) as captured:
            out = self.model(
                input_ids=input_ids,
                position_ids=position_ids,
                past_key_values=cache,
                attention_mask=attention_mask,
                use_cache=True,
                logits_to_keep=logits_to_keep,
            )
            features = torch.cat(captured, dim=-1) if capture else None
        return TargetOutput(logits=out.logits.float(), features=features)

    @torch.no_grad()
    def training_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None):
        """For head training: fused features [B, T, 3H] and final (normed) hidden states
        [B, T, H], which `teacher_stats` and `lm_head_rows` turn into the target's logits."""
        with self._capturing(True) as captured:
            out = self.model.model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
            features = torch.cat(captured, dim=-1)
        return features, out.last_hidden_state

    @torch.no_grad()
    def teacher_stats(self, hidden: torch.Tensor, chunk: int = 512) -> tuple[torch.Tensor, torch.Tensor]:
        """The target's greedy token [N] (int64) and the log-sum-exp of its full-vocabulary
        logits [N] (float32) at each final hidden state of hidden [N, H], `chunk` rows at a
        time (a [chunk, V] float32 block, not [N, V]). Stored with the features, they let
        training compute logits over the draft vocabulary's rows of lm_head only."""
        tokens, normalizers = [], []
        for block in hidden.split(chunk):
            logits = self.model.lm_head(block.to(self.dtype)).float()
            tokens.append(argmax(logits))
            normalizers.append(torch.logsumexp(logits, -1))
        return torch.cat(tokens), torch.cat(normalizers)

    def lm_head_rows(self, token_ids: torch.Tensor) -> torch.Tensor:
        """The rows of lm_head for these target tokens [n] -> [n, H]: the logits of those
        tokens alone are hidden @ rows.T (the same products as the full lm_head's)."""
        if getattr(self.model.lm_head, "bias", None) is not None:
            raise ValueError("target: an lm_head with a bias is not supported for head training")
        return self.model.lm_head.weight[token_ids]

    @property
    def mask_dtype(self) -> torch.dtype:
        """bool where every decoder layer runs in C++, whose attention reads a keep mask as it
        is (an additive one it would compare with 0 in every layer), else the model dtype."""
        layers = self.model.model.layers
        return torch.bool if all(forward_kind(layer) == "C++" for layer in layers) else self.dtype

    def attention_mask(self, allowed: torch.Tensor, query_positions: torch.Tensor, key_positions: torch.Tensor):
        """The mask [B, 1, q, kv] in mask_dtype from allowed [B, q, kv], restricted to the
        attention window where this target has one (a dict by layer type for targets that mix
        sliding-window and full layers). Positions: [B, q] and [B, kv]."""
        window, dtype = getattr(self.config, "sliding_window", None), self.mask_dtype
        if window is None:
            return layer_mask(allowed, dtype)
        sliding = layer_mask(allowed & in_window(query_positions, key_positions, window), dtype)
        if self.config.model_type == "mistral":
            return sliding
        if "sliding_attention" in (getattr(self.config, "layer_types", None) or ()):
            return {"full_attention": layer_mask(allowed, dtype), "sliding_attention": sliding}
        return layer_mask(allowed, dtype)

    def tree_mask(self, prefix_len: int, positions: torch.Tensor, ancestors: torch.Tensor):
        """The mask for verifying one tree (positions [n], ancestors [n, n], see DraftTree)
        on top of a prefix_len-long cache: [1, 1, n, prefix_len + n] or a dict of them."""
        return self.rows_tree_mask(transfer.to_device([prefix_len], positions.device), prefix_len, positions[None],
                                   ancestors[None])

    def rows_tree_mask(self, lengths: torch.Tensor, written: int, positions: torch.Tensor, ancestors: torch.Tensor):
        """One tree per row (positions [B, n], ancestors [B, n, n]) written after the `written`
        cached positions, of which row b's first lengths[b] are valid: [B, 1, n, written + n]."""
        batch = positions.shape[0]
        key_positions = torch.cat([torch.arange(written, device=positions.device).expand(batch, written), positions], 1)
        return self.attention_mask(ragged_allowed(lengths, written, ancestors), positions, key_positions)


def _eos_token_ids(model: PreTrainedModel, tokenizer) -> frozenset[int]:
    ids = getattr(model.generation_config, "eos_token_id", None)
    if ids is None:
        ids = model.config.eos_token_id
    if ids is None and tokenizer is not None:
        ids = tokenizer.eos_token_id
    if ids is None:
        return frozenset()
    return frozenset([ids] if isinstance(ids, int) else ids)


def set_arithmetic(model: PreTrainedModel, attention: str = "auto") -> PreTrainedModel:
    """Set the model's attention implementation, in place. auto picks eagle3.invariant's
    batch-invariant attention on a CPU in 16-bit floats, or in float32 where the C++ float32
    product multiplies (eagle3.invariant.wants_invariant_arithmetic), and turns the model's
    linear layers into row-invariant ones (together they keep greedy decoding exact there);
    elsewhere auto leaves the model's own. A CPU model's other linear layers multiply on
    prepacked weights where its dtype allows (eagle3.invariant.prepackable). With the
    invariant arithmetic the decoder layers run eagle3.decoder_layer's lean forward (the same
    bits in fewer dispatches; in C++ where it was built). Returns the model."""
    if attention == "auto" and wants_invariant_arithmetic(model.device, model.dtype):
        attention = INVARIANT_ATTENTION
    if attention != "auto":
        model.set_attn_implementation(attention)
    if attention == INVARIANT_ATTENTION:
        make_row_invariant(model)
    elif model.device.type == "cpu":
        prepack_linears(model)
    use_lean_layers(model, attention == INVARIANT_ATTENTION)
    return model


def names_a_path(path: str) -> bool:
    """Whether `path` can only be a local path (absolute, relative with a dot, home, or a file
    name), never a hub id of the form namespace/name."""
    return os.path.isabs(path) or path.startswith((".", "~")) or path.endswith(".gguf")


def load_target(
    path: str,
    device: str | None = "auto",
    dtype: str | torch.dtype | None = "auto",
    trust_remote_code: bool = False,
    attention: str = "auto",
) -> Target:
    """Load a Llama / Qwen2 / Qwen3 / Mistral causal LM and its tokenizer.

    `path` is a local model directory, a `.gguf` file or a directory holding one (see
    `eagle3.gguf`), or a hub id where a network is available.
    """
    torch_device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, torch_device)
    path = os.path.expanduser(path)
    if names_a_path(path) and not os.path.exists(path):
        raise FileNotFoundError(f"target: '{path}' does not exist (no such file or directory)")
    gguf = find_gguf(path)
    if gguf is not None:
        path = dequantized(gguf)
    elif not os.path.isdir(path) and os.environ.get("HF_HUB_OFFLINE") == "1":
        raise FileNotFoundError(
            f"target: '{path}' is not a local directory or .gguf file and HF_HUB_OFFLINE=1 forbids downloading it"
        )
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=torch_dtype, trust_remote_code=trust_remote_code)
    except OSError as error:
        raise FileNotFoundError(f"target: cannot load '{path}': {error}") from error
    return Target(set_arithmetic(model.to(torch_device), attention), tokenizer)
