"""How many drafted nodes a round verifies: the budget that maximises accepted tokens per second.

Verifying a tree costs what one target forward over its nodes costs, and that depends on the
device: on a GPU or a CPU with AMX a 16-token forward costs little more than a one-token
step; with AVX-512 alone each node adds a visible share. `VerifyCosts` measures that curve
once per process and model (a few forwards after a short prefill, a second or two on a CPU)
and reads it between the measured sizes by straight lines.

`NodeBudget` then cuts each round's tree. A node's draft score s (its path's cumulative log
probability under the head, or d * log(hit rate) for a copy's d-th token, eagle3.lookup)
makes c * exp(s) an estimate of the chance that the target accepts it, c being the measured
ratio of accepted drafts to predicted ones, kept per depth and apart for the head's nodes
and the copies' (the head is over- or under-confident; copies come in streaks that
d * log(hit rate) undervalues). The n most likely nodes are worth E(n) = 1 + (sum of their
chances) tokens, and the round keeps the n that maximises E(n) / (D + V(n + 1)), D being
what its drafting took and V the verification curve: EAGLE-2's expected-acceptance ranking
with a hardware price, as in Sequoia and SpecExec. Rows of a batch share one n, priced at
the batch's token count. The curve was measured at a short context; each round's time scales
it to the context and load of the moment.

Before a round, the budget also says how far the head drafts (`limits`): at most one level
more than the deepest head node it kept lately, since deeper drafts would be cut anyway and
drafting them costs; within the round, no level whose nodes could not be worth their
verification (each cut prices a further node in expected tokens, and a node's chance is at
most its calibrated exp(score), which never rises along a path); and none at all while the
head does not pay. Whether it pays is the best rate with its nodes and its draft time
against the best without them (plain decoding, or the copies alone), averaged over recent
rounds. Where a verified node costs much of a step (float32 on a CPU without AMX or AVX-512
BF16, say) the head rests, so speculation falls back to plain decoding instead of losing to
it; it drafts again after a rest that doubles while it keeps losing, to see whether the
text has become easier. Any cut, depth, floor or rest is lossless: it only chooses which
drafts are verified.
"""

from __future__ import annotations

import bisect
import math
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch

from eagle3.target import Target
from eagle3.transfer import clock
from eagle3.tree import MAX_DEPTH, NO_FLOOR, DraftLimits, DraftTree

if TYPE_CHECKING:
    from eagle3.decoding import GenerationConfig, Settled

NODE_BUDGETS = ("measured", "fixed")  # a NodeBudget cuts each round's trees, or the tree config's size is kept
# The tree sizes whose verification is timed (root included). Between them the cost is taken
# as linear, but a CPU's products take rows in tiles (eagle3/csrc/product.cpp: fours, the
# last five or six rows in one), so its curve has steps, measured at 6 and 12 too.
MEASURED_NODES = (1, 2, 4, 6, 8, 12, 16, 32, 64)
HEAD_SOURCES = ("head", "both")  # the nodes a round would not have without the head's drafting
LONGEST_REST = 16  # rounds the head rests at most before it drafts again


@dataclass(frozen=True)
class VerifyCosts:
    """Seconds one target forward takes to verify a tree of n nodes (n = 1 is a plain step),
    measured at `nodes` (ascending)."""

    nodes: tuple[int, ...]
    seconds: tuple[float, ...]

    def at(self, n: float) -> float:
        """Seconds for n nodes: linear between the measured sizes, beyond them the nearest
        segment's slope (never below the one-node cost)."""
        nodes, seconds = self.nodes, self.seconds
        if len(nodes) == 1:
            return seconds[0] * max(n, 1) / nodes[0]
        i = min(max(bisect.bisect_left(nodes, n), 1), len(nodes) - 1)
        slope = (seconds[i] - seconds[i - 1]) / (nodes[i] - nodes[i - 1])
        return max(seconds[0], seconds[i - 1] + slope * (n - nodes[i - 1]))

    def in_steps(self) -> list[float]:
        """Each measured size's cost in one-node steps."""
        return [s / self.at(1) for s in self.seconds]


def verify_step(target: Target, cache, ids: torch.Tensor, context: int, n: int):
    """A call that verifies an n-node chain after `context` cached positions and drops its
    keys again: what a round's verification costs (a chain costs what any n-node tree does)."""
    device = target.device
    positions = torch.arange(context, context + n, device=device)[None]
    mask = target.tree_mask(context, positions[0], torch.ones(n, n, dtype=torch.bool, device=device).tril())

    def run():
        target.forward(ids[:, :n], positions, cache, mask, capture=True)
        cache.truncate(context)
    return run


_MEASURED: "weakref.WeakKeyDictionary[torch.nn.Module, VerifyCosts]" = weakref.WeakKeyDictionary()


@torch.inference_mode()
def measure_verify_costs(target: Target, nodes: tuple[int, ...] = MEASURED_NODES, context: int = 128,
                         repeats: int = 5) -> VerifyCosts:
    """The target's verification curve on its device: the fastest of `repeats` forwards per
    size after a prefill of `context` random tokens (a busy machine only ever adds time),
    made non-decreasing. The sizes take turns, one forward each a pass, so that a slow spell
    of the machine (another process, the host) lands on every size alike and the curve's
    shape, which prices the trees, keeps. Measured once per model and process."""
    known = _MEASURED.get(target.model)
    if known is not None and known.nodes == tuple(nodes):
        return known
    device = target.device
    cache = target.new_cache(context + max(nodes))
    ids = torch.randint(0, target.vocab_size, (1, max(context, max(nodes))), device=device,
                        generator=torch.Generator(device).manual_seed(0))
    target.forward(ids[:, :context], torch.arange(context, device=device)[None], cache, logits_to_keep=1)
    calls = [verify_step(target, cache, ids, context, n) for n in nodes]
    for call in calls:  # warm-up
        call()
    seconds = [math.inf] * len(nodes)
    for _ in range(repeats):
        for i, call in enumerate(calls):
            start = clock(device)
            call()
            seconds[i] = min(seconds[i], clock(device) - start)
    costs = VerifyCosts(tuple(nodes), tuple(min(seconds[i:]) for i in range(len(seconds))))
    _MEASURED[target.model] = costs
    return costs


def head_nodes(tree: DraftTree) -> list[int]:
    """The tree's nodes that the head's drafting brought (its own, or shared with the copies)."""
    return [node for node in range(1, len(tree)) if tree.source(node) in HEAD_SOURCES]


def calibration_key(tree: DraftTree, node: int) -> tuple[str, int]:
    """The calibration a node belongs to: its class (copies apart, the head's and shared drafts
    together) and its depth."""
    return "copy" if tree.source(node) == "copy" else "head", tree.depths[node]


@dataclass
class NodeBudget:
    """Cuts each round's trees to the node count with the most expected tokens per second."""

    costs: VerifyCosts
    memory: float = 0.9  # weight of the past in the calibration's sums (per round that drafts the class) and the price
    prior: float = 1.0  # how many predicted drafts the depth above weighs in a depth's calibration
    accepted: dict[tuple[str, int], float] = field(default_factory=dict)  # decayed sums per (class, depth) of
    predicted: dict[tuple[str, int], float] = field(default_factory=dict)  # accepted drafts and their predicted number
    history: list[int] = field(default_factory=list)  # nodes verified per round, root included
    gate_memory: float = 0.5  # weight of the past in the head's pay ratio: a few rounds turn the gate
    depth_window: int = 8  # rounds whose deepest kept head node sets the next draft depth
    scale: float | None = None  # measured round time over the curve's price, recently (context and load)
    head_ratio: float | None = None  # best rate with the head over the best without it, recently
    rest: int = 0  # rounds the head still rests
    next_rest: int = 1  # the next rest's length, doubled while the head keeps losing
    kept_depths: deque = field(default_factory=deque)  # per recent round the head drafted: its deepest kept node
    priced: tuple[float, int] | None = None  # this round's draft seconds and verified tokens
    price: float | None = None  # expected tokens a further verified node must bring to pay, recently
    floors: bool = True  # whether limits() sets floors: the draft then reads each level's best score, a wait on a GPU

    def __post_init__(self):
        self.kept_depths = deque(self.kept_depths, maxlen=self.depth_window)

    def limits(self) -> DraftLimits:
        """How far the head drafts this round: no levels while it rests; at most one more than
        its deepest node kept lately; no depth d where a node's calibrated exp(score), the most
        its chance can be, stays under the price (floors[d] = log(price / calibration))."""
        if self.rest:
            self.rest -= 1
            return DraftLimits(0)
        levels = min(MAX_DEPTH, max(self.kept_depths) + 1) if self.kept_depths else MAX_DEPTH
        if not (self.floors and self.price):
            return DraftLimits(levels)
        return DraftLimits(levels, tuple(NO_FLOOR if d == 0 else math.log(self.price / calibration)
                                         for d, calibration in enumerate(self.calibrations("head", levels))))

    def calibrations(self, kind: str, depth: int) -> list[float]:
        """Accepted drafts per predicted one, recently, for the head's or the copies' nodes at
        each depth 0..depth (1 at the root): the head is over- or under-confident by depth, and
        copies come in streaks that d * log(hit rate) undervalues. Each depth's ratio is shrunk
        toward the one above, so a depth seldom verified lately takes its parent's and the cut
        goes on exploring depth by depth."""
        calibrations = [1.0]
        for d in range(1, depth + 1):
            key = (kind, d)
            calibrations.append((self.accepted.get(key, 0.0) + self.prior * calibrations[-1])
                                / (self.predicted.get(key, 0.0) + self.prior))
        return calibrations

    def calibration(self, kind: str, depth: int) -> float:
        return self.calibrations(kind, depth)[depth]

    def chances(self, tree: DraftTree) -> list[float]:
        """Each node's expected chance of acceptance (the root's is 1): its calibrated exp(score),
        never above its parent's, since a node is only accepted after its parent."""
        calibrations = {kind: self.calibrations(kind, tree.depth) for kind in ("head", "copy")}
        chances = [1.0] * len(tree)
        for node in range(1, len(tree)):
            kind, depth = calibration_key(tree, node)
            chances[node] = min(chances[tree.parents[node]], calibrations[kind][depth] * math.exp(tree.scores[node]))
        return chances

    def rates(self, chances: list[list[float]], draft_seconds: float) -> list[float]:
        """Expected tokens per second when each row keeps its n best non-root nodes, for n = 0,
        1, ... up to the largest row's, given each row's node chances (root first)."""
        ranked = [sorted(row[1:], reverse=True) for row in chances]
        rows, gain, rates = len(ranked), 0.0, []
        for n in range(max(len(row) for row in ranked) + 1):
            if n:
                gain += sum(row[n - 1] for row in ranked if len(row) >= n)
            rates.append((rows + gain) / (draft_seconds + (self.scale or 1.0) * self.costs.at(rows * (n + 1))))
        return rates

    def size(self, chances: list[list[float]], draft_seconds: float) -> int:
        """The number of best non-root nodes each row keeps."""
        return best_size(self.rates(chances, draft_seconds))

    def cut(self, trees: list[DraftTree], draft_seconds: float) -> list[DraftTree]:
        chances = [self.chances(tree) for tree in trees]
        rates = self.rates(chances, draft_seconds)
        n = best_size(rates)
        self.update_price(rates[n], len(trees) * (n + 1))
        drafted = any(head_nodes(tree) for tree in trees)
        if drafted:
            self.weigh_head(trees, chances, draft_seconds)
        trees = [tree.best(n, row) for tree, row in zip(trees, chances)]
        if drafted:
            self.kept_depths.append(max((tree.depths[node] for tree in trees for node in head_nodes(tree)), default=0))
        self.history.append(max(len(tree) for tree in trees))
        self.priced = draft_seconds, len(trees) * self.history[-1]
        return trees

    def update_price(self, rate: float, tokens: int) -> None:
        """The expected tokens one more verified node must bring for the round's rate to rise:
        the rate times that node's verification time, at the kept size."""
        price = rate * (self.scale or 1.0) * max(self.costs.at(tokens + 1) - self.costs.at(tokens), 0.0)
        self.price = price if self.price is None else self.memory * self.price + (1 - self.memory) * price

    def weigh_head(self, trees: list[DraftTree], chances: list[list[float]], draft_seconds: float) -> None:
        """Update the head's pay ratio with this round's trees; where it has fallen below 1, the
        head rests for the next rounds."""
        without = [[chance for node, chance in enumerate(row) if tree.source(node) not in HEAD_SOURCES]
                   for tree, row in zip(trees, chances)]
        ratio = max(self.rates(chances, draft_seconds)) / max(self.rates(without, 0.0))
        past = ratio if self.head_ratio is None else self.head_ratio
        self.head_ratio = self.gate_memory * past + (1 - self.gate_memory) * ratio
        if self.head_ratio < 1:
            self.rest, self.next_rest = self.next_rest, min(2 * self.next_rest, LONGEST_REST)
        else:
            self.next_rest = 1

    def observe(self, settled: list[Settled], seconds: float | None = None) -> None:
        """Learn from a round's outcome: the calibration from what was accepted, the scale
        from `seconds`, the round's time from the start of drafting."""
        if seconds is not None and self.priced is not None:
            draft_seconds, tokens = self.priced
            scale = max(seconds - draft_seconds, 0.0) / self.costs.at(tokens)
            self.scale = scale if self.scale is None else self.memory * self.scale + (1 - self.memory) * scale
        for done in settled:
            tree = done.tree
            if tree is None or len(tree) == 1:
                continue  # the prefill, or a round with nothing drafted
            accepted: dict[tuple[str, int], float] = {}
            predicted: dict[tuple[str, int], float] = {}
            for node in range(1, len(tree)):
                key = calibration_key(tree, node)
                predicted[key] = predicted.get(key, 0.0) + math.exp(tree.scores[node])
            for node in done.path:
                key = calibration_key(tree, node)
                accepted[key] = accepted.get(key, 0.0) + 1
            drafted = {kind for kind, _ in predicted}
            for key in set(self.predicted) | set(predicted):
                if key[0] in drafted:  # every depth of a class that drafted decays, verified or not
                    self.accepted[key] = self.memory * self.accepted.get(key, 0.0) + accepted.get(key, 0.0)
                    self.predicted[key] = self.memory * self.predicted.get(key, 0.0) + predicted.get(key, 0.0)


def best_size(rates: list[float]) -> int:
    """The node count with the best rate: at least one where anything was drafted, so that the
    calibration keeps learning (a source cut to nothing would never be verified again,
    however good it became)."""
    least = min(1, len(rates) - 1)
    return max(range(least, len(rates)), key=lambda n: (rates[n], -n))


def node_budget(kind: str, target: Target, config: GenerationConfig) -> NodeBudget | None:
    """A fresh NodeBudget for one decode under `config` ("measured"; the curve is measured on
    first use), or None: "fixed", or sampling with a seed. The cut follows timings, which
    differ between runs, so a seeded sampled run keeps the fixed tree and its seed
    reproduces its output (its distribution is the target's either way)."""
    if kind not in NODE_BUDGETS:
        raise ValueError(f"node budget: {kind!r} is not one of {', '.join(NODE_BUDGETS)}")
    if kind == "fixed" or (not config.sampling.greedy and config.seed is not None):
        return None
    # A CPU reads a draft level's scores for free; a GPU would wait for each level instead of
    # queueing the next, so there the head drafts its levels without floors.
    return NodeBudget(measure_verify_costs(target), floors=target.device.type == "cpu")
