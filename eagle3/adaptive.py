"""Adaptive draft depth: each round's depth (and tree budget) chosen from measured costs
and recent acceptance, to maximise tokens per second.

Per draft position i the policy keeps a moving average r_i of P(accept position i |
accepted positions 1..i-1). A depth-d round then yields E(d) = 1 + sum_{i<=d} prod_{j<=i}
r_j tokens. Its cost is modelled as a + b * d, fitted to the measured (depth, seconds) of
recent rounds. The depth maximising E(d) / cost(d) is chosen; positions never measured
count with an optimistic prior, so the depth grows while whole paths get accepted and
shrinks when little is. Any depth is lossless: the policy only changes what is drafted.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from eagle3.tree import TreeConfig


def scaled_tree(base: TreeConfig, depth: int) -> TreeConfig:
    """`base` at another depth, its node budget scaled in proportion (capped at the base's)."""
    per_level = max(1, (base.total_tokens - 1) // max(1, base.depth))
    return TreeConfig(depth, base.top_k, max(base.top_k + 1, min(base.total_tokens, 1 + per_level * depth)))


@dataclass
class AdaptiveDepth:
    min_depth: int = 1
    max_depth: int = 10
    memory: float = 0.85  # weight of the past in the acceptance averages
    prior: float = 0.75  # acceptance rate assumed at positions not measured yet
    window: int = 32  # rounds in the cost fit
    rates: list[float] = field(default_factory=list)
    costs: deque = field(default_factory=deque)
    depth: int = 0
    history: list[int] = field(default_factory=list)  # the depth used in each round

    def __post_init__(self):
        if not 1 <= self.min_depth <= self.max_depth <= 64:
            raise ValueError(f"adaptive depth: bounds [{self.min_depth}, {self.max_depth}] must satisfy 1 <= min <= max <= 64")
        self.rates = [self.prior] * self.max_depth
        self.costs = deque(maxlen=self.window)
        self.depth = self.depth or self.min_depth + (self.max_depth - self.min_depth) // 2

    def tree(self, base: TreeConfig) -> TreeConfig:
        """This round's tree: the chosen depth, with the node budget scaled to it."""
        return scaled_tree(base, self.depth)

    def observe(self, depth: int, accepted: int, seconds: float) -> None:
        """Record a round that drafted `depth` levels, accepted `accepted` and took `seconds`."""
        self.history.append(depth)
        for position in range(min(accepted + 1, depth)):
            outcome = 1.0 if position < accepted else 0.0
            self.rates[position] = self.memory * self.rates[position] + (1 - self.memory) * outcome
        if depth > 0:
            self.costs.append((depth, seconds))
        self.depth = self.best_depth()

    def expected_tokens(self, depth: int) -> float:
        total, reach = 1.0, 1.0
        for rate in self.rates[:depth]:
            reach *= rate
            total += reach
        return total

    def cost(self, depth: int) -> float:
        """Seconds for a round of this depth, from a least-squares line through recent rounds."""
        if not self.costs:
            return 1.0 + depth  # nothing measured yet: any increasing cost gives the same start
        n = len(self.costs)
        mean_d = sum(d for d, _ in self.costs) / n
        mean_s = sum(s for _, s in self.costs) / n
        spread = sum((d - mean_d) ** 2 for d, _ in self.costs)
        if spread == 0:  # one depth seen so far: assume a fixed part as large as one level
            slope = mean_s / (mean_d + 1)
        else:
            slope = max(0.0, sum((d - mean_d) * (s - mean_s) for d, s in self.costs) / spread)
        intercept = max(mean_s - slope * mean_d, 1e-6)
        return intercept + slope * depth

    def best_depth(self) -> int:
        depths = range(self.min_depth, self.max_depth + 1)
        return max(depths, key=lambda d: self.expected_tokens(d) / self.cost(d))
