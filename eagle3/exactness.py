"""Where a greedy speculative output leaves the plain one, and whether the target stood at a
near-tie there.

On the CPU the decoders are bit-exact (eagle3.invariant), so greedy outputs are equal token
for token. On CUDA a verified tree and a one-token step go through different kernels, whose
rounding can flip the argmax where the target's two best tokens are within rounding of each
other. `divergence` names the first differing token and measures, by one more target
forward over the common prefix, how far apart the two tokens' logits are: within
`tolerance` is a near-tie, which is rounding; beyond it, a bug.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from eagle3.decoding import encode_prompt
from eagle3.target import Target
from eagle3.transfer import to_device, to_host

# A near-tie: the two logits within this many units of the dtype's rounding at their size
# (bfloat16 at a logit of 20: about 0.6; float32: about 1e-5).
NEAR_TIE_ROUNDINGS = 4


def first_difference(a: list[int], b: list[int]) -> int:
    """The first index where the two token lists differ (the shorter's length if one is a prefix)."""
    return next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))


@dataclass(frozen=True)
class Divergence:
    index: int  # the first output token where the outputs differ
    plain: int | None  # plain decoding's token there; None: its output had ended
    other: int | None  # the other decoder's token there
    gap: float | None  # |logit(plain) - logit(other)| there, by a fresh forward; None if one had ended
    tolerance: float  # the gap below which it is a near-tie

    @property
    def near_tie(self) -> bool:
        return self.gap is not None and self.gap <= self.tolerance

    def describe(self) -> str:
        if self.gap is None:
            return f"outputs differ from token {self.index} (one ended there)"
        kind = "a near-tie" if self.near_tie else "not a near-tie"
        return (f"outputs differ from token {self.index}: {kind}, the target's logits for the two tokens "
                f"{self.gap:.3g} apart (tolerance {self.tolerance:.2g})")


@torch.inference_mode()
def divergence(target: Target, prompt: str | list[int], plain_ids: list[int], other_ids: list[int]) -> Divergence | None:
    """The first place where other_ids leaves plain_ids (both greedy continuations of the
    prompt, text or ids), or None where they are equal."""
    if plain_ids == other_ids:
        return None
    prompt_ids = encode_prompt(target, prompt)
    index = first_difference(plain_ids, other_ids)
    plain = plain_ids[index] if index < len(plain_ids) else None
    other = other_ids[index] if index < len(other_ids) else None
    if plain is None or other is None:
        return Divergence(index, plain, other, None, 0.0)
    context = prompt_ids + plain_ids[:index]
    ids = to_device([context], target.device)
    positions = torch.arange(len(context), device=target.device)[None]
    logits = target.forward(ids, positions, target.new_cache(len(context)), logits_to_keep=1).logits[0, -1]
    plain_logit, other_logit = to_host(logits[[plain, other]])[0]
    size = max(abs(plain_logit), abs(other_logit), 1.0)
    tolerance = NEAR_TIE_ROUNDINGS * torch.finfo(target.dtype).eps * size
    return Divergence(index, plain, other, abs(plain_logit - other_logit), tolerance)
