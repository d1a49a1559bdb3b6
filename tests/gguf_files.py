"""Tiny GGUF files written with the `gguf` package, for the GGUF loading tests."""

from __future__ import annotations

import numpy as np


def write_tiny_llama(path: str, arch: str = "llama", quantization: str = "Q8_0", seed: int = 0) -> None:
    """A 4-layer Llama (width 32, a byte-level BPE vocabulary of 260 tokens) with a tokenizer
    and a chat template; the 2D weights are blocks of `quantization` ("F32": plain floats)."""
    import gguf

    from tokenizers.pre_tokenizers import ByteLevel

    rng = np.random.default_rng(seed)
    hidden, ffn, layers, heads, kv_heads = 32, 64, 4, 4, 2
    tokens = sorted(ByteLevel.alphabet()) + ["<|im_start|>", "<|im_end|>", "ab", "Ġab"]
    writer = gguf.GGUFWriter(path, arch)
    writer.add_context_length(128)
    writer.add_embedding_length(hidden)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_freq_base(10000.0)
    writer.add_vocab_size(len(tokens))
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * 256 + [3, 3, 1, 1])
    writer.add_token_merges(["a b", "Ġ ab"])
    writer.add_bos_token_id(256)
    writer.add_eos_token_id(257)
    writer.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
                             "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")

    def tensor(name: str, *shape: int) -> None:
        values = (rng.standard_normal(shape) * 0.2).astype(np.float32)
        kind = gguf.GGMLQuantizationType[quantization]
        if kind != gguf.GGMLQuantizationType.F32 and len(shape) == 2:
            writer.add_tensor(name, gguf.quants.quantize(values, kind), raw_dtype=kind)
        else:
            writer.add_tensor(name, values if len(shape) == 2 else np.ones(shape, np.float32))

    tensor("token_embd.weight", len(tokens), hidden)
    tensor("output_norm.weight", hidden)
    tensor("output.weight", len(tokens), hidden)
    for i in range(layers):
        tensor(f"blk.{i}.attn_norm.weight", hidden)
        tensor(f"blk.{i}.attn_q.weight", hidden, hidden)
        tensor(f"blk.{i}.attn_k.weight", hidden * kv_heads // heads, hidden)
        tensor(f"blk.{i}.attn_v.weight", hidden * kv_heads // heads, hidden)
        tensor(f"blk.{i}.attn_output.weight", hidden, hidden)
        tensor(f"blk.{i}.ffn_norm.weight", hidden)
        tensor(f"blk.{i}.ffn_gate.weight", ffn, hidden)
        tensor(f"blk.{i}.ffn_up.weight", ffn, hidden)
        tensor(f"blk.{i}.ffn_down.weight", hidden, ffn)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
