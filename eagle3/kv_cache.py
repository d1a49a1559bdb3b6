"""A preallocated key/value cache that speculative decoding can compact in place.

All layers' keys and values share one buffer of shape [layers, 2, batch, kv_heads, capacity,
head_dim]; each layer reads and writes its own [batch, kv_heads, capacity, head_dim] views.
Appending writes into the buffer (no torch.cat per step, unlike DynamicCache), and after
tree verification `keep_rows` moves the accepted positions of every layer so that they sit
right after the prefix, in one gather and one scatter. The class speaks the transformers
`Cache` protocol, so a Hugging Face model fills it like any other cache; the draft head uses
the same layers directly.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import Cache, DynamicLayer

from eagle3 import transfer


class PreallocatedLayer(DynamicLayer):
    """One layer's keys and values; `keys` / `values` are views of the filled part. Its
    buffers are views of its KVCache's (`owner`, layer `index`), or its own without one."""

    def __init__(self, capacity: int, dtype: torch.dtype | None = None, owner: "KVCache | None" = None,
                 index: int = 0):
        super().__init__()
        self.capacity = capacity
        self.length = 0
        self.storage_dtype = dtype  # None: the states' own dtype
        self.owner, self.index = owner, index

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.dtype, self.device = self.storage_dtype or key_states.dtype, key_states.device
        if self.owner is not None:
            buffers = self.owner.buffers(self.index, key_states, self.dtype)
            self._keys, self._values = buffers[0], buffers[1]  # views one by one: unbind's may not be written
        else:
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

    def select_rows(self, rows: torch.Tensor) -> None:
        """Keep only these batch rows (e.g. drop finished sequences)."""
        if self.is_initialized:
            if self.owner is not None:
                self._keys, self._values = self.owner.storage[self.index, 0], self.owner.storage[self.index, 1]
            else:
                self._keys, self._values = self._keys[rows], self._values[rows]
            self._set_length(self.length)


class KVCache(Cache):
    """A transformers Cache of `num_layers` preallocated layers holding up to `capacity`
    positions, stored in `dtype` (default: the model's; eagle3.invariant.cache_dtype gives its attention's)."""

    def __init__(self, num_layers: int, capacity: int, dtype: torch.dtype | None = None):
        super().__init__(layers=[PreallocatedLayer(capacity, dtype, self, i) for i in range(num_layers)])
        self.capacity = capacity
        self.storage: torch.Tensor | None = None  # [layers, 2, batch, kv_heads, capacity, head_dim], with the first keys

    def buffers(self, index: int, key_states: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
        """Layer `index`'s keys and values buffers [2, batch, kv_heads, capacity, head_dim]."""
        if self.storage is None:
            batch, heads, _, head_dim = key_states.shape
            self.storage = key_states.new_zeros(len(self.layers), 2, batch, heads, self.capacity, head_dim, dtype=dtype)
        return self.storage[index]

    @property
    def length(self) -> int:
        return self.layers[0].length

    def truncate(self, length: int) -> None:
        for layer in self.layers:
            layer.truncate(length)

    def keep(self, start: int, offsets: list[int]) -> None:
        """One sequence after a tree verification: keep the tree positions start + offsets,
        packed after start, and drop the rest."""
        self.keep_rows([start], start, [offsets])

    def keep_rows(self, starts: list[int], source: int, offsets: list[list[int]]) -> None:
        """Ragged rows: row b keeps positions source + offsets[b] (ascending) right after its own
        starts[b]; the shared length becomes the longest row's, shorter rows' tails being stale
        (masked). One gather and one scatter per layer, whatever the rows."""
        rows, targets, sources = [], [], []
        for row, (start, kept) in enumerate(zip(starts, offsets)):
            # Kept positions that already sit where they belong (a plain step, a chain of
            # first children) move nothing.
            moves = [(start + i, source + k) for i, k in enumerate(kept) if start + i != source + k]
            rows += [row] * len(moves)
            targets += [t for t, _ in moves]
            sources += [s for _, s in moves]
        if rows and self.storage is not None:
            rows, targets, sources = transfer.to_device([rows, targets, sources], self.storage.device)
            with torch.inference_mode():  # the buffers are inference tensors when filled under inference mode
                # Every layer's keys and values at once; the sources are read first, so overlaps are safe.
                self.storage[:, :, rows, :, targets] = self.storage[:, :, rows, :, sources]
        self.truncate(max(start + len(kept) for start, kept in zip(starts, offsets)))

    @torch.inference_mode()
    def select_rows(self, rows: torch.Tensor) -> None:
        if self.storage is not None:
            self.storage = self.storage[:, :, rows]
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
