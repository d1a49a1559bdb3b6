"""EAGLE-3 speculative decoding for Hugging Face causal LMs."""

from eagle3.acceptance import SamplingConfig, TokenState
from eagle3.checkpoint import load_head, save_head
from eagle3.decode import GenerationConfig, plain_decode, speculative_decode
from eagle3.events import RoundEvent, Token, TreeView
from eagle3.head import Eagle3Config, Eagle3Head
from eagle3.stats import RunStats, collect
from eagle3.target import Target, load_target
from eagle3.tree import TreeConfig

__all__ = [
    "Eagle3Config", "Eagle3Head", "GenerationConfig", "RoundEvent", "RunStats", "SamplingConfig",
    "Target", "Token", "TokenState", "TreeConfig", "TreeView", "collect", "load_head", "load_target",
    "plain_decode", "save_head", "speculative_decode",
]
