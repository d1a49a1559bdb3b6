"""A preallocated key/value cache that speculative decoding can compact in place.

Each layer owns one buffer of shape [batch, kv_heads, capacity, head_dim] for keys and one
for values. Appending writes into the buffer (no torch.cat per step, unlike DynamicCache),
and after tree verification `keep` gathers the accepted positions so that they sit right
after the prefix. The class speaks the transformers `Cache` protocol, so a Hugging Face
model fills it like any other cache; the draft head uses the same layers directly.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicLayer


class PreallocatedLayer(DynamicLayer):
    """One layer's keys and values; `keys` / `values` are views of the filled part."""

    def __init__(self, capacity: int, dtype: torch.dtype | None = None):
        super().__init__()
        self.capacity = capacity
        self.length = 0
        self.storage_dtype = dtype  # None: the states' own dtype

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = self.storage_dtype or key_states.dtype, key_states.device
        batch, heads, _, head_dim = key_states.shape
        self._keys = key_states.new_zeros(batch, heads, self.capacity, head_dim, dtype=self.dtype)
        self._values = value_states.new_zeros(batch, heads, self.capacity, value_states.shape[-1], dtype=self.dtype)
        self._set_length(0)
        self.is_initialized = True

    def _set_length(self, length: int) -> None:
        self.length = length
        self.keys = self._keys[:, :, :length]
        self.values = self._values[:, :, :length]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        """Append [batch, kv_heads, n, head_dim] states; return all keys and values so far."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        start, end = self.length, self.length + key_states.shape[-2]
        if end > self.capacity:
            raise RuntimeError(f"KV cache overflow: {end} positions, capacity {self.capacity}")
        self._keys[:, :, start:end] = key_states
        self._values[:, :, start:end] = value_states
        self._set_length(end)
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self.length

    def get_max_length(self) -> int:
        return self.capacity

    def crop(self, tokens_to_remove: int) -> None:
        """transformers convention: a negative count removes that many trailing positions."""
        self.truncate(self.length - abs(tokens_to_remove))

    def truncate(self, length: int) -> None:
        if self.is_initialized:
            self._set_length(length)

    @torch.inference_mode()  # the buffers are inference tensors when filled under inference mode
    def keep_rows(self, starts: list[int], source: int, offsets: list[torch.Tensor], rows: list[int]) -> None:
        """Per row b of `rows`: keep positions source + offsets[b] (ascending), packed right
        after starts[b]; the source is copied first, so overlapping ranges are safe."""
        if not self.is_initialized:
            return
        for row in rows:
            start, index = starts[row], offsets[row] + source
            n = index.numel()
            self._keys[row, :, start : start + n] = self._keys[row, :, index]
            self._values[row, :, start : start + n] = self._values[row, :, index]

    @torch.inference_mode()
    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only these batch rows (e.g. drop finished sequences)."""
        if self.is_initialized:
            self._keys, self._values = self._keys[rows], self._values[rows]
            self._set_length(self.length)


class KVCache(Cache):
    """A transformers Cache of `num_layers` preallocated layers holding up to `capacity`
    positions, stored in `dtype` (default: the model's; see eagle3.invariant for float64)."""

    def __init__(self, num_layers: int, capacity: int, dtype: torch.dtype | None = None):
        super().__init__(layers=[PreallocatedLayer(capacity, dtype) for _ in range(num_layers)])
        self.capacity = capacity

    @property
    def length(self) -> int:
        return self.layers[0].length

    def truncate(self, length: int) -> None:
        for layer in self.layers:
            layer.truncate(length)

    def keep(self, start: int, offsets: torch.Tensor) -> None:
        """One sequence after a tree verification: keep the tree positions start + offsets,
        packed after start, and drop the rest."""
        self.keep_rows([start], start, [offsets])

    def keep_rows(self, starts: list[int], source: int, offsets: list[torch.Tensor]) -> None:
        """Ragged rows: row b keeps source + offsets[b] right after its own starts[b]; the
        shared length becomes the longest row's, shorter rows' tails being stale (masked)."""
        # A row whose kept positions already sit where they belong (a plain step, a chain of
        # first children) moves nothing: ascending offsets 0..n-1 written at its own start.
        moved = [row for row, (start, index) in enumerate(zip(starts, offsets))
                 if index.numel() and (start != source or int(index[-1]) != index.numel() - 1)]
        for layer in self.layers:
            layer.keep_rows(starts, source, offsets, moved)
        self.truncate(max(start + index.numel() for start, index in zip(starts, offsets)))

    def select_rows(self, rows: torch.Tensor) -> None:
        for layer in self.layers:
            layer.select_rows(rows)


class SlotLayer(PreallocatedLayer):
    """One layer of a SlotKVCache: a one-token step writes row b's key at its own length."""

    def __init__(self, slots: "SlotKVCache", capacity: int):
        super().__init__(capacity)
        self.slots = slots

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        """Write one [slots, kv_heads, 1, head_dim] step at each row's length; return the
        keys and values of the first `slots.width` positions of every row."""
        rows, lengths = self.slots.rows, self.slots.lengths
        self._keys[rows, :, lengths] = key_states[:, :, 0]
        self._values[rows, :, lengths] = value_states[:, :, 0]
        width = self.slots.width
        return self._keys[:, :, :width], self._values[:, :, :width]

    @torch.inference_mode()
    def grow(self, capacity: int) -> None:
        if self.is_initialized:
            for name in ("_keys", "_values"):
                old = getattr(self, name)
                new = old.new_zeros(*old.shape[:2], capacity, old.shape[-1])
                new[:, :, : old.shape[2]] = old
                setattr(self, name, new)
        self.capacity = capacity

    @torch.inference_mode()
    def insert(self, slots: list[int], source: PreallocatedLayer, lengths: list[int]) -> None:
        if not self.is_initialized:
            batch, heads, _, head_dim = source._keys.shape
            self.lazy_initialization(source._keys.new_empty(len(self.slots.rows), heads, 1, head_dim),
                                     source._values.new_empty(len(self.slots.rows), heads, 1, source._values.shape[-1]))
        for i, (slot, n) in enumerate(zip(slots, lengths)):
            self._keys[slot, :, :n] = source._keys[i, :, :n]
            self._values[slot, :, :n] = source._values[i, :, :n]


class SlotKVCache(Cache):
    """A cache of `slots` independent rows for continuous batching (training-data generation):
    row b holds lengths[b] valid positions, starting at 0, and a one-token forward writes
    each row's new key at lengths[b]. A finished row's slot takes a new prompt, whose keys a
    batched prefill made in an ordinary KVCache (`insert`). The caller sets `width` (at least
    max(lengths) + 1) before each step and masks each row's keys past its own length."""

    def __init__(self, num_layers: int, slots: int, capacity: int, device: torch.device | None = None):
        super().__init__(layers=[SlotLayer(self, capacity) for _ in range(num_layers)])
        self.capacity = capacity
        self.rows = torch.arange(slots, device=device)
        self.lengths = torch.zeros(slots, dtype=torch.long, device=device)
        self.width = 1

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.width

    def grow(self, capacity: int) -> None:
        """Room for at least `capacity` positions per row (a longer prompt came in); kept rows stay."""
        if capacity > self.capacity:
            for layer in self.layers:
                layer.grow(capacity)
            self.capacity = capacity

    def insert(self, slots: list[int], source: KVCache, lengths: list[int]) -> None:
        """Rows 0.. of `source` (first lengths[i] positions each) become the given slots."""
        for layer, source_layer in zip(self.layers, source.layers):
            layer.insert(slots, source_layer, lengths)
        self.lengths[slots] = torch.tensor(lengths, device=self.lengths.device)
