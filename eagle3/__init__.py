"""EAGLE-3 speculative decoding for Hugging Face causal LMs."""

from eagle3.acceptance import SamplingConfig, TokenState
from eagle3.adaptive import AdaptiveDepth
from eagle3.budget import NodeBudget, VerifyCosts, measure_verify_costs, node_budget
from eagle3.checkpoint import load_head, save_head
from eagle3.decoding import GenerationConfig, decode
from eagle3.drafters import BudgetedDrafter, CopyDrafter, Drafter, HeadDrafter, HybridDrafter, drafter_named
from eagle3.events import RoundEvent, Token
from eagle3.head import Eagle3Config, Eagle3Head
from eagle3.lookup import LookupConfig
from eagle3.stats import RunStats, collect, collect_rows
from eagle3.target import Target, load_target
from eagle3.tree import DraftTree, TreeConfig

__all__ = [
    "AdaptiveDepth", "BudgetedDrafter", "CopyDrafter", "DraftTree", "Drafter", "Eagle3Config", "Eagle3Head",
    "GenerationConfig", "HeadDrafter", "HybridDrafter", "LookupConfig", "NodeBudget", "RoundEvent", "RunStats",
    "SamplingConfig", "Target", "Token", "TokenState", "TreeConfig", "VerifyCosts", "collect", "collect_rows", "decode",
    "drafter_named", "load_head", "load_target", "measure_verify_costs", "node_budget", "save_head",
]
