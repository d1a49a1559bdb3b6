"""The EAGLE-3 draft head: fused target features in, draft tokens out.

    features [.., 3 * target_hidden] --fc--> h [.., H]
    x = concat(input_layernorm(embed(token)), hidden_norm(h))   [.., 2H], embedding first
    h = h + attention(x);  h = h + mlp(post_attention_layernorm(h))
    logits = lm_head(norm(h))                                   [.., draft_vocab_size]

The pre-norm output h is fed back as the next step's feature, so only target features go
through `fc`. A draft token id d is target token d + d2t[d].

EAGLE 3.1 (config.json `fc_norm`, `norm_output`; read by vLLM, SGLang and TensorRT-LLM)
adds two norms against the drift of deep drafts: `fc_norm`, an RMSNorm on each of the three
target features before `fc` (their scales differ by layer), and `norm_output`, the step's
output taken after `norm`, so that the next step and `lm_head` read the normalised state.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import torch
import torch.nn.functional as F
from torch import nn
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaMLP, LlamaRMSNorm, LlamaRotaryEmbedding, apply_rotary_pos_emb

from eagle3.decoder_layer import native_fits
from eagle3.invariant import SharedInput
from eagle3.kv_cache import KVCache, PreallocatedLayer
from eagle3.native import layer_ops

ARCHITECTURES = ("LlamaForCausalLMEagle3", "Eagle3LlamaForCausalLM", "LlamaForCausalLM")
EAGLE31_NORMS = ("fc_norm", "norm_output")  # config.json's flags of an EAGLE 3.1 head (module docstring)


def aux_layers_from_config(raw: dict) -> tuple[int, int, int] | None:
    """Our aux layer ids (hidden_states indices: the input of decoder layer i) from config.json.

    Two spellings are published, one layer apart: SpecForge and SGLang write
    `eagle_config.eagle_aux_hidden_state_layer_ids` as the OUTPUT of layer i (SGLang adds 1
    to capture them), vLLM reads a top-level `eagle_aux_hidden_state_layer_ids` as the INPUT
    of layer i. Both present must agree."""
    nested = (raw.get("eagle_config") or {}).get("eagle_aux_hidden_state_layer_ids")
    top = raw.get("eagle_aux_hidden_state_layer_ids")
    from_nested = tuple(int(i) + 1 for i in nested) if nested else None
    from_top = tuple(int(i) for i in top) if top else None
    if from_nested and from_top and from_nested != from_top:
        raise ValueError(
            f"eagle_aux_hidden_state_layer_ids: eagle_config says outputs of layers {list(nested)} (inputs of "
            f"{list(from_nested)}) but the top-level list says inputs of {list(from_top)}; they must name the same layers"
        )
    return from_top or from_nested


def aux_layers_to_config(aux: tuple[int, int, int] | None) -> dict:
    """config.json fields that name the aux layers to both engines (nothing for the default)."""
    if aux is None:
        return {}
    fields = {"eagle_aux_hidden_state_layer_ids": list(aux)}  # vLLM: inputs of these layers
    if min(aux) >= 1:  # SpecForge / SGLang: outputs of the layers before
        fields["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": [i - 1 for i in aux], "use_aux_hidden_state": True}
    return fields


@dataclass
class Eagle3Config:
    """The fields of a published head's config.json that define the module."""

    hidden_size: int
    intermediate_size: int
    num_attention_heads: int
    num_key_value_heads: int
    vocab_size: int  # the target's vocabulary
    draft_vocab_size: int
    target_hidden_size: int
    head_dim: int | None = None
    rms_norm_eps: float = 1e-6
    rope_theta: float = 10000.0
    rope_scaling: dict | None = None
    max_position_embeddings: int = 4096
    hidden_act: str = "silu"
    # hidden_states indices (input of decoder layer i) of the low / mid / high features;
    # None means the reference default (2, L // 2, L - 3) of the target.
    aux_layer_ids: tuple[int, int, int] | None = None
    architecture: str = "LlamaForCausalLMEagle3"
    torch_dtype: str = "float32"
    fc_norm: bool = False  # EAGLE 3.1 (module docstring)
    norm_output: bool = False
    extra: dict = field(default_factory=dict)  # other config.json fields, written back as read

    def __post_init__(self):
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads

    @classmethod
    def for_target(cls, config, draft_vocab_size: int) -> "Eagle3Config":
        """A head shaped like one decoder layer of the target with this (transformers) config."""
        rope = dict(config.rope_parameters or {})
        rope_theta = rope.pop("rope_theta", 10000.0)
        return cls(
            hidden_size=config.hidden_size, intermediate_size=config.intermediate_size,
            num_attention_heads=config.num_attention_heads, num_key_value_heads=config.num_key_value_heads,
            head_dim=getattr(config, "head_dim", None), vocab_size=config.vocab_size, draft_vocab_size=draft_vocab_size,
            target_hidden_size=config.hidden_size, rms_norm_eps=config.rms_norm_eps, rope_theta=rope_theta,
            rope_scaling=None if rope.get("rope_type", "default") == "default" else rope,
            max_position_embeddings=config.max_position_embeddings,
        )

    @classmethod
    def from_dict(cls, raw: dict) -> "Eagle3Config":
        """Parse a published config.json; a missing or unknown field is named in the error."""
        architectures = raw.get("architectures") or ["LlamaForCausalLMEagle3"]
        if architectures[0] not in ARCHITECTURES:
            raise ValueError(
                f"architectures: '{architectures[0]}' is not an EAGLE-3 head architecture "
                f"(expected one of {', '.join(ARCHITECTURES)})"
            )
        layers = raw.get("num_hidden_layers", 1)
        if layers != 1:
            raise ValueError(f"num_hidden_layers: an EAGLE-3 head has 1 decoder layer, config.json says {layers}")
        for name in ("hidden_size", "intermediate_size", "num_attention_heads", "vocab_size"):
            if name not in raw:
                raise ValueError(f"{name}: missing from the head's config.json")
        aux = aux_layers_from_config(raw)
        known = set(cls.__dataclass_fields__) | {"architectures", "num_hidden_layers", "eagle_config", "model_type",
                                                 "tie_word_embeddings", "dtype", "eagle_aux_hidden_state_layer_ids"}
        return cls(
            hidden_size=raw["hidden_size"],
            intermediate_size=raw["intermediate_size"],
            num_attention_heads=raw["num_attention_heads"],
            num_key_value_heads=raw.get("num_key_value_heads") or raw["num_attention_heads"],
            vocab_size=raw["vocab_size"],
            draft_vocab_size=raw.get("draft_vocab_size") or raw["vocab_size"],
            target_hidden_size=raw.get("target_hidden_size") or raw["hidden_size"],
            head_dim=raw.get("head_dim"),
            rms_norm_eps=raw.get("rms_norm_eps", 1e-6),
            rope_theta=raw.get("rope_theta", 10000.0),
            rope_scaling=raw.get("rope_scaling"),
            max_position_embeddings=raw.get("max_position_embeddings", 4096),
            hidden_act=raw.get("hidden_act", "silu"),
            aux_layer_ids=aux,
            architecture=architectures[0],
            torch_dtype=str(raw.get("torch_dtype") or raw.get("dtype") or "float32"),
            fc_norm=bool(raw.get("fc_norm", False)),
            norm_output=bool(raw.get("norm_output", False)),
            extra={k: v for k, v in raw.items() if k not in known},
        )

    def to_dict(self) -> dict:
        """config.json in the published format (a one-layer Llama config plus EAGLE-3 fields)."""
        fields = asdict(self)
        raw = dict(fields.pop("extra"))
        aux = fields.pop("aux_layer_ids")
        for flag in EAGLE31_NORMS:  # written only when set: EAGLE-3 heads keep their exact format
            if not fields[flag]:
                del fields[flag]
        raw.update(fields)
        raw.update(architectures=[raw.pop("architecture")], model_type="llama", num_hidden_layers=1,
                   tie_word_embeddings=False)
        raw.update(aux_layers_to_config(aux))
        return raw

    def llama_config(self) -> LlamaConfig:
        """The equivalent LlamaConfig, for the rotary embedding and the MLP."""
        return LlamaConfig(
            hidden_size=self.hidden_size,
            intermediate_size=self.intermediate_size,
            num_attention_heads=self.num_attention_heads,
            num_key_value_heads=self.num_key_value_heads,
            head_dim=self.head_dim,
            rms_norm_eps=self.rms_norm_eps,
            rope_theta=self.rope_theta,
            rope_scaling=self.rope_scaling,
            max_position_embeddings=self.max_position_embeddings,
            hidden_act=self.hidden_act,
            vocab_size=self.vocab_size,
            num_hidden_layers=1,
        )


class Eagle3Attention(nn.Module):
    """Llama attention whose q/k/v read the 2H-wide [embedding; feature] input."""

    def __init__(self, config: Eagle3Config):
        super().__init__()
        self.num_heads, self.num_kv_heads, self.head_dim = (config.num_attention_heads, config.num_key_value_heads,
                                                            config.head_dim)
        kv_width = config.num_key_value_heads * config.head_dim
        self.q_proj = nn.Linear(2 * config.hidden_size, config.num_attention_heads * config.head_dim, bias=False)
        self.k_proj = nn.Linear(2 * config.hidden_size, kv_width, bias=False)
        self.v_proj = nn.Linear(2 * config.hidden_size, kv_width, bias=False)
        self.o_proj = nn.Linear(config.num_attention_heads * config.head_dim, config.hidden_size, bias=False)

    def forward(self, x, cos, sin, mask, cache: PreallocatedLayer | UnrolledKV | None):
        """x [B, n, 2H]; mask [B or 1, 1, n, kv], bool (True: attend) or additive, or None
        (causal, no cache)."""
        batch, n, _ = x.shape
        # The head counts named, not inferred: a training step may run no anchors at all (n = 0).
        q = self.q_proj(x).view(batch, n, self.num_heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(batch, n, self.num_kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(batch, n, self.num_kv_heads, self.head_dim).transpose(1, 2)
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        if isinstance(cache, UnrolledKV):
            out = cache.attend(q, k, v)
        else:
            if cache is not None:  # a draft cache may store another dtype (Eagle3Head.draft_cache)
                k, v = (states.to(q.dtype) for states in cache.update(k, v))
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None, enable_gqa=True)
        return self.o_proj(out.transpose(1, 2).reshape(batch, n, self.num_heads * self.head_dim))


class UnrolledKV:
    """Attention for the training-time test, where step i of the unroll at anchor t sees the
    step-0 keys causally (positions <= t) plus the keys of steps 1..i at the same anchor,
    exactly what a depth-i tree node sees at inference. Costs T^2 + i*T, not (i+1)*T^2.

    A step may run some anchors only: set `anchors` [B, T] (bool) before it, and its inputs
    come packed, one row [1, N, ..] of those N anchors in row-major order. Each step's anchors
    must be among the previous step's, so that every anchor finds its own chain's keys."""

    def __init__(self):
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.anchors: torch.Tensor | None = None  # [B, T] bool: the anchors this step runs; None: all, unpacked

    def attend(self, q, k, v):
        """q [B, h, T, d], k / v [B, kv_h, T, d] of the current step -> [B, h, T, d]; with
        `anchors`, q / k / v [1, h or kv_h, N, d] -> [1, h, N, d]."""
        q, k, v = (self.unpacked(x) for x in (q, k, v))
        groups = q.shape[1] // k.shape[1]
        self.keys.append(k.repeat_interleave(groups, dim=1))
        self.values.append(v.repeat_interleave(groups, dim=1))
        scale, length = q.shape[-1] ** -0.5, q.shape[2]
        causal = torch.ones(length, length, dtype=torch.bool, device=q.device).tril()
        scores = [(q @ self.keys[0].transpose(-1, -2) * scale).masked_fill(~causal, float("-inf"))]
        scores += [(q * key).sum(-1, keepdim=True) * scale for key in self.keys[1:]]
        weights = torch.softmax(torch.cat(scores, dim=-1).float(), dim=-1).to(q.dtype)
        out = weights[..., :length] @ self.values[0]
        for step, value in enumerate(self.values[1:]):
            out = out + weights[..., length + step : length + step + 1] * value
        return self.packed(out)

    def unpacked(self, x: torch.Tensor) -> torch.Tensor:
        """[1, h, N, d] of the anchors -> [B, h, T, d], zero at the anchors that do not run
        (their rows are computed and dropped: the attention is a small part of a step)."""
        if self.anchors is None:
            return x
        dense = x.new_zeros(*self.anchors.shape, x.shape[1], x.shape[3])
        return dense.index_put((self.anchors,), x[0].transpose(0, 1)).transpose(1, 2)

    def packed(self, x: torch.Tensor) -> torch.Tensor:
        """[B, h, T, d] -> [1, h, N, d] of the anchors."""
        return x if self.anchors is None else x.transpose(1, 2)[self.anchors].transpose(0, 1)[None]


class Eagle3DecoderLayer(nn.Module):
    def __init__(self, config: Eagle3Config):
        super().__init__()
        self.hidden_norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.input_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.post_attention_layernorm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.self_attn = Eagle3Attention(config)
        self.mlp = LlamaMLP(config.llama_config())

    def forward(self, embeds, hidden, cos, sin, mask, cache):
        """embeds, hidden [B, n, H]; cos / sin [B, n, D] -> [B, n, H]."""
        if mask is not None and isinstance(cache, PreallocatedLayer) and self.runs_native():
            return self.native_forward(embeds, hidden, cos, sin, mask, cache)
        x = torch.cat([self.input_layernorm(embeds), self.hidden_norm(hidden)], dim=-1)
        hidden = hidden + self.self_attn(x, cos, sin, mask, cache)
        return hidden + self.mlp(self.post_attention_layernorm(hidden))

    def runs_native(self) -> bool:
        """Whether a drafting step runs the C++ layer (eagle3/csrc/decoder_layer.cpp): it was
        built, the products run prepacked (eagle3.invariant) as stacked q/k/v and gate/up, and
        the MLP is SiLU-gated."""
        qkv = getattr(self.self_attn.q_proj, "shared_input", None)  # set on prepacked layers only
        gate_up = getattr(self.mlp.gate_proj, "shared_input", None)
        return (isinstance(qkv, SharedInput) and isinstance(gate_up, SharedInput)
                and self.self_attn.q_proj.packs() and native_fits(self))

    def native_forward(self, embeds, hidden, cos, sin, mask, cache: PreallocatedLayer):
        """forward in two C++ calls, the cache written between them; the attention is
        eagle3/csrc/attention.cpp's, whose sums run in its own order rather than sdpa's."""
        attention, mlp, ops = self.self_attn, self.mlp, layer_ops()
        qkv, gate_up = attention.q_proj.shared_input, mlp.gate_proj.shared_input
        query, key, value = ops.draft_attention_inputs(
            embeds, self.input_layernorm.weight, hidden, self.hidden_norm.weight, self.input_layernorm.variance_epsilon,
            *qkv.weights.tensors(), attention.num_heads, attention.num_kv_heads, attention.head_dim, cos, sin)
        key, value = cache.update(key, value)
        norm = self.post_attention_layernorm
        return ops.layer_output(
            hidden, query, key, value, mask, attention.head_dim ** -0.5, *attention.o_proj.packed_weights().tensors(),
            1, 0, norm.weight, norm.variance_epsilon, *gate_up.weights.tensors(), 1, 0, gate_up.widths[0],
            *mlp.down_proj.packed_weights().tensors(), 1, 0)


class Eagle3Head(nn.Module):
    """The draft module. `shared_embedding` is the target's (frozen, not a submodule) unless
    `own_embedding` is set, as for heads whose width differs from their target's."""

    def __init__(self, config: Eagle3Config, shared_embedding: nn.Embedding | None = None, own_embedding: bool = False):
        super().__init__()
        self.config = config
        self.fc = nn.Linear(3 * config.target_hidden_size, config.hidden_size, bias=False)
        self.fc_norm = nn.ModuleList([LlamaRMSNorm(config.target_hidden_size, eps=config.rms_norm_eps)
                                      for _ in range(3)]) if config.fc_norm else None
        self.midlayer = Eagle3DecoderLayer(config)
        self.norm = LlamaRMSNorm(config.hidden_size, eps=config.rms_norm_eps)
        self.lm_head = nn.Linear(config.hidden_size, config.draft_vocab_size, bias=False)
        self.register_buffer("d2t", torch.zeros(config.draft_vocab_size, dtype=torch.long))
        self.register_buffer("t2d", torch.ones(config.vocab_size, dtype=torch.bool))
        self.rotary = LlamaRotaryEmbedding(config.llama_config())
        # Its frequencies in float32, kept out of the module's buffers so that `.to(dtype)` leaves them:
        # published heads are trained with float32 RoPE, and bfloat16 ones would shift every angle.
        self._rope_inv_freq = self.rotary.inv_freq.clone()
        self._rope_table: torch.Tensor | None = None  # rotation(): cos and sin [positions, 2, D]
        self.embed_tokens = nn.Embedding(config.vocab_size, config.hidden_size) if own_embedding else None
        # A list keeps the target's embedding out of this module's parameters and state dict.
        self._shared_embedding = [shared_embedding]

    def _apply(self, fn, recurse=True):
        """`.to()`, `.cuda()`, `.half()` and the like, with the RoPE frequencies kept in float32."""
        super()._apply(fn, recurse)
        device = self.rotary.inv_freq.device
        self.rotary.inv_freq = self._rope_inv_freq.to(device)
        self.rotary.original_inv_freq = self._rope_inv_freq.to(device)
        self._rope_table = None
        return self

    def draft_cache(self, capacity: int) -> KVCache:
        """A cache for drafting up to `capacity` positions: float32 where the layer runs in C++,
        whose attention reads float32 (converted once, when written), else the head's dtype."""
        with torch.inference_mode():  # as drafting runs
            native = self.midlayer.runs_native()
        return KVCache(1, capacity, torch.float32 if native else None)

    def embed(self, token_ids: torch.Tensor) -> torch.Tensor:
        table = self.embed_tokens if self.embed_tokens is not None else self._shared_embedding[0]
        if table is None:
            raise ValueError("embed_tokens: this head has no embeddings of its own and no target was attached")
        return table(token_ids)

    def project(self, features: torch.Tensor) -> torch.Tensor:
        """Fused target features [.., 3 * target_hidden] -> draft hidden [.., H]."""
        if self.fc_norm is not None:  # each feature (low, mid, high) normalised on its own
            features = torch.cat([self.normed(norm, chunk) for norm, chunk in zip(self.fc_norm, features.chunk(3, dim=-1))],
                                 dim=-1)
        return self.fc(features.to(self.fc.weight.dtype))

    def forward(self, hidden, token_ids, position_ids, mask=None, cache: PreallocatedLayer | None = None):
        """One draft step. hidden [B, n, H] pairs with token_ids [B, n] (the token after the
        feature's position) at position_ids [B, n]; returns the new hidden [B, n, H]."""
        embeds = self.embed(token_ids).to(hidden.dtype)
        cos, sin = self.rotation(hidden, position_ids, cache)
        out = self.midlayer(embeds, hidden, cos, sin, mask, cache)
        return self.normed(self.norm, out) if self.config.norm_output else out

    def rotation(self, hidden, position_ids, cache) -> tuple[torch.Tensor, torch.Tensor]:
        """The rotary embedding's cos and sin [B, n, D] at position_ids [B, n], in hidden's dtype.
        With a preallocated cache, whose capacity bounds the positions, they are read from a
        table of every position the rotary embedding made once (one read instead of its dozen
        ops at every draft step); elsewhere (training) it computes them."""
        if not isinstance(cache, PreallocatedLayer):
            return self.rotary(hidden, position_ids)
        table = self._rope_table
        if table is None or table.shape[0] < cache.capacity or table.dtype != hidden.dtype:
            positions = torch.arange(cache.capacity, device=hidden.device)[None]
            self._rope_table = table = torch.stack([t[0] for t in self.rotary(hidden, positions)], dim=1)
        rotation = table[position_ids]  # [B, n, 2, D]
        return rotation[:, :, 0], rotation[:, :, 1]

    def logits(self, hidden: torch.Tensor) -> torch.Tensor:
        """[.., H] (a step's output) -> [.., draft_vocab_size] logits over the draft vocabulary."""
        return self.lm_head(hidden if self.config.norm_output else self.normed(self.norm, hidden))

    def normed(self, norm: LlamaRMSNorm, hidden: torch.Tensor) -> torch.Tensor:
        """norm(hidden) [.., D]: in one C++ call where the layer runs there, with the same bits."""
        if self.midlayer.runs_native():
            return layer_ops().rms_norm(hidden, norm.weight, norm.variance_epsilon)
        return norm(hidden)
