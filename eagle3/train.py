"""Train an EAGLE-3 head on a frozen target with the training-time test (TTT).

    python -m eagle3.train --target DIR --data data.jsonl --out HEAD_DIR --work runs/head
    python -m eagle3.train --target DIR --features runs/features --out HEAD_DIR   # precomputed
    accelerate launch -m eagle3.train --target DIR --features runs/features --out HEAD_DIR

The target computes the fused low / mid / high features and its own next-token
distribution for each batch, online or once ahead (`python -m eagle3.features`). Under
`accelerate launch` each process takes its share of every batch and the gradients are
averaged (DDP, or FSDP as `accelerate config` sets it); the result is that of one
process with the whole batch, and only the first process writes files. The head is unrolled
`--ttt-steps` times: step 0 reads the target features, step i > 0 reads its own previous
output with the tokens shifted by i, attending like a depth-i tree node does at inference.
Each step's loss is, on positions whose token is to be learned and whose target argmax is
in the draft vocabulary, the soft cross-entropy against the target's distribution restricted
to the draft vocabulary (`--loss kl`), or one of the LK losses, which optimise the acceptance
rate itself (`lk-alpha`, `lk-lambda`; below); the total weighs step i by decay^i.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import sys
import time
from dataclasses import dataclass, replace

import torch
import transformers
from torch.nn.utils.rnn import pad_sequence
from tqdm import tqdm

from eagle3.checkpoint import load_head, save_head
from eagle3.data import Example, load_examples, pad_batch
from eagle3.features import STATES, FeatureStore
from eagle3.head import Eagle3Config, Eagle3Head, UnrolledKV
from eagle3.target import DTYPES, Target, bf16_supported, load_target, training_dtype
from eagle3.training import CsvLog, adamw, autocast, cosine_lr, load_state, save_state, set_lr, written_whole


def build_draft_vocab(examples: list[Example], vocab_size: int, draft_vocab_size: int,
                      keep: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The draft_vocab_size most frequent learned tokens -> (d2t [draft], t2d [vocab]); with
    keep (a t2d [vocab]), its tokens first, then the most frequent others.

    Ties and unused slots go to the lowest ids, so the result is deterministic."""
    if not 1 <= draft_vocab_size <= vocab_size:
        raise ValueError(f"draft_vocab_size: {draft_vocab_size} is outside [1, {vocab_size}]")
    counts = torch.zeros(vocab_size, dtype=torch.long)
    for example in examples:
        ids = torch.tensor(example.input_ids)[torch.tensor(example.loss_mask, dtype=torch.bool)]
        counts += torch.bincount(ids, minlength=vocab_size)
    kept = keep.cpu().tolist() if keep is not None else [False] * vocab_size
    counts = counts.tolist()
    order = sorted(range(vocab_size), key=lambda t: (not kept[t], -counts[t], t))
    chosen = torch.tensor(sorted(order[:draft_vocab_size]))
    t2d = torch.zeros(vocab_size, dtype=torch.bool)
    t2d[chosen] = True
    return chosen - torch.arange(draft_vocab_size), t2d


def widen_draft_vocab(head: Eagle3Head, target: Target, examples: list[Example], draft_vocab_size: int) -> None:
    """Give the head a larger draft vocabulary, in place: every token it drafts keeps its
    row of lm_head, and the most frequent learned tokens it lacks join it (build_draft_vocab).
    A new token's row is the target's lm_head row carried by the map [target H, head H] that
    best carries (least squares) the target's rows of the head's own tokens onto the head's
    rows, so the head starts by scoring a new token from its state as it scores the tokens it
    knows."""
    if draft_vocab_size <= head.config.draft_vocab_size:
        raise ValueError(f"draft_vocab_size: {draft_vocab_size} is not larger than the head's "
                         f"{head.config.draft_vocab_size}")
    device, rows = head.lm_head.weight.device, head.lm_head.weight.detach().float()  # [draft, head H]
    known = torch.arange(head.config.draft_vocab_size, device=device) + head.d2t
    d2t, t2d = build_draft_vocab(examples, target.vocab_size, draft_vocab_size, keep=head.t2d)
    d2t, t2d = d2t.to(device), t2d.to(device)
    tokens = torch.arange(draft_vocab_size, device=device) + d2t  # ascending, as known is
    at = torch.searchsorted(tokens, known)  # each known token's new draft id
    target_rows = target.lm_head_rows(tokens.to(target.device)).float().to(device)  # [new draft, target H]
    carry = torch.linalg.lstsq(target_rows[at], rows).solution
    weight = target_rows @ carry
    weight[at] = rows
    head.config = replace(head.config, draft_vocab_size=draft_vocab_size)
    head.lm_head = torch.nn.Linear(head.config.hidden_size, draft_vocab_size, bias=False,
                                   device=device, dtype=head.lm_head.weight.dtype)
    with torch.no_grad():
        head.lm_head.weight.copy_(weight)
    head.d2t, head.t2d = d2t, t2d


def new_head(target: Target, draft_vocab_size: int, seed: int, eagle31: bool = False) -> Eagle3Head:
    """A freshly initialised head shaped like one decoder layer of the target; eagle31 adds
    EAGLE 3.1's norms (eagle3.head)."""
    torch.manual_seed(seed)
    config = Eagle3Config.for_target(target.config, draft_vocab_size)
    config.fc_norm = config.norm_output = eagle31
    head = Eagle3Head(config, target.input_embeddings)
    for module in head.modules():
        if isinstance(module, torch.nn.Linear):
            torch.nn.init.normal_(module.weight, std=0.02)
    return head


def shift(x: torch.Tensor, by: int, fill=0) -> torch.Tensor:
    """x[:, t] <- x[:, t + by] along dim 1, filling the end."""
    if by == 0:
        return x
    pad = torch.full_like(x[:, :by], fill)
    return torch.cat([x[:, by:], pad], dim=1)


class ForwardKL:
    """EAGLE-3's objective: the soft cross-entropy against the target's draft-vocabulary
    distribution (forward KL up to the target's entropy)."""

    def __call__(self, cross_entropy: torch.Tensor, acceptance: torch.Tensor) -> torch.Tensor:
        return cross_entropy


class LKAlpha:
    """-log(acceptance): the acceptance rate's own likelihood (Samarin et al., "LK Losses",
    arXiv 2602.23881). Its gradient is TV distance's scaled by 1 / acceptance, large where
    the head and the target overlap little, so it trains from a cold start."""

    def __call__(self, cross_entropy: torch.Tensor, acceptance: torch.Tensor) -> torch.Tensor:
        return -torch.log(acceptance.clamp_min(1e-8))


@dataclass
class LKLambda:
    """The LK paper's hybrid: w * cross-entropy + (1 - w) * (1 - acceptance), with
    w = scale * exp(-decay * acceptance), so distillation leads while the head is poor and
    acceptance once it is good."""

    scale: float = 1.0
    decay: float = 3.0

    def __call__(self, cross_entropy: torch.Tensor, acceptance: torch.Tensor) -> torch.Tensor:
        weight = self.scale * torch.exp(-self.decay * acceptance)
        return weight * cross_entropy + (1 - weight) * (1 - acceptance)


OBJECTIVES = {"kl": ForwardKL, "lk-alpha": LKAlpha, "lk-lambda": LKLambda}


class TeacherAgreement(torch.autograd.Function):
    """How a step's drafts agree with the teacher, summed over its M learned positions: the
    soft cross-entropy sum -w log q and the acceptance sum min(w * mass, q), q = softmax(logits),
    w the teacher's draft-vocabulary distribution; and each position's most likely draft token.

    The same sums as log_softmax, exp, minimum and their autograd, taken a block of rows at a
    time with the gradient written by hand: on a CPU a fresh [M, draft] temporary costs more in
    page faults than its arithmetic, and autograd would make about ten of them per unrolled
    step, so the only ones made here are the logits' gradient and blocks small enough for the
    allocator to reuse.
    """

    BLOCK_ELEMENTS = 1 << 21  # rows * draft per block: 8 MB of float32

    @staticmethod
    def blocks(logits: torch.Tensor):
        rows = max(1, TeacherAgreement.BLOCK_ELEMENTS // logits.shape[1])
        return [slice(start, start + rows) for start in range(0, logits.shape[0], rows)]

    @staticmethod
    def forward(ctx, logits, probs, mass, rows, columns):
        """logits [M, draft] the head's; probs [B, T, draft] the teacher's, read at (rows,
        columns) [M]; mass [M] the teacher's probability of the draft vocabulary there.
        -> cross-entropy sum [], acceptance sum [], argmax [M]."""
        cross_entropy = logits.new_zeros((), dtype=torch.float32)
        acceptance = cross_entropy.clone()
        drafted = torch.empty(logits.shape[0], dtype=torch.long, device=logits.device)
        normalizers = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
        for block in TeacherAgreement.blocks(logits):
            z = logits[block].float()  # logits itself where they are float32: not written to
            normalizers[block] = torch.logsumexp(z, -1)
            logq = z - normalizers[block, None]
            wanted = probs[rows[block], columns[block]]
            cross_entropy -= (wanted * logq).sum()
            drafted[block] = logq.argmax(-1)
            acceptance += torch.minimum(wanted.mul_(mass[block, None]), logq.exp_()).sum()
        ctx.save_for_backward(logits, normalizers, probs, mass, rows, columns)
        ctx.mark_non_differentiable(drafted)
        return cross_entropy, acceptance, drafted

    @staticmethod
    def backward(ctx, grad_cross_entropy, grad_acceptance, _):
        """d/dz of -sum w log q is q sum(w) - w; of sum min(p, q) it is q (m - sum q m), m = [q < p]
        (at a tie torch.minimum splits the gradient; a tie here needs q = p = 0, where q's
        gradient is 0 either way)."""
        logits, normalizers, probs, mass, rows, columns = ctx.saved_tensors
        grad = torch.empty_like(logits, dtype=torch.float32)
        for block in TeacherAgreement.blocks(logits):
            q = (logits[block].float() - normalizers[block, None]).exp_()
            wanted = probs[rows[block], columns[block]]
            q_below = q * (q < wanted * mass[block, None])
            per_row = (grad_cross_entropy * wanted.sum(-1, keepdim=True)
                       - grad_acceptance * q_below.sum(-1, keepdim=True))
            g = torch.mul(q, per_row, out=grad[block])
            g.addcmul_(q_below, grad_acceptance).addcmul_(wanted, grad_cross_entropy, value=-1)
        return grad.to(logits.dtype), None, None, None, None


class TTTLoss(torch.nn.Module):
    """The head under the training-time test, as one module so that DDP or FSDP can wrap it."""

    def __init__(self, head: Eagle3Head, steps: int = 7, decay: float = 0.8, objective=None):
        super().__init__()
        self.head, self.steps, self.decay = head, steps, decay
        self.objective = objective or ForwardKL()

    def forward(self, features, teacher: "Teacher", input_ids, loss_mask, normalizer=None):
        """The loss of one batch, and per unrolled step its loss, accuracy and acceptance [steps].

        features [B, T, 3H] of the target on input_ids [B, T], `teacher` its distribution at
        each position; loss_mask [B, T] marks tokens to learn (0 on padding). Anchor t at step
        i reads token x[t + 1 + i] and predicts x[t + 2 + i], whose target distribution is the
        teacher's at t + 1 + i. The loss is the objective's, from the soft cross-entropy against
        the teacher's draft-vocabulary distribution and the acceptance, sum_v min(p, q) averaged
        over positions: the chance that the target accepts a token drafted from the head's q
        (p: the target's whole-vocabulary probabilities); accuracy is top-1 agreement. `normalizer` turns this process's count of learned
        positions into the divisor: with several processes, the global count over their
        number, so that the mean of their losses (what data-parallel training optimises) is
        the loss of the whole batch.
        """
        head = self.head
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)[None].expand_as(input_ids)
        learned = [(shift(loss_mask, 2 + i) > 0) & shift(teacher.in_draft_vocab, 1 + i, fill=False)
                   for i in range(self.steps)]
        # Step i > 0 runs the anchors where it or a later step learns: an anchor's chain feeds only
        # its own later steps. Step 0 runs them all: its keys are every later step's context.
        runs = list(itertools.accumulate(reversed(learned), torch.logical_or))[::-1]
        runs[0] = torch.ones_like(runs[0])
        hidden, ran, kv = head.project(features).flatten(0, 1), runs[0], UnrolledKV()  # hidden [N, H] of `ran`
        total, losses, accuracies, acceptances = 0.0, [], [], []
        for i in range(self.steps):
            hidden = hidden[runs[i][ran]]
            ran = kv.anchors = runs[i]
            hidden = head(hidden[None], shift(input_ids, 1 + i)[ran][None], (positions + i)[ran][None], None, kv)[0]
            rows, anchors = learned[i].nonzero(as_tuple=True)
            taught = anchors + 1 + i  # the position of the teacher's distribution for each anchor's token
            count = learned[i].sum().float()
            count = (normalizer(count) if normalizer else count).clamp_min(1)
            logits = head.logits(hidden[learned[i][ran]])  # [M, draft]
            cross_entropy, acceptance, drafted = TeacherAgreement.apply(
                logits, teacher.probs, teacher.mass[rows, taught], rows, taught)
            acceptance = acceptance / count
            loss = self.objective(cross_entropy / count, acceptance)
            total = total + self.decay**i * loss
            losses.append(loss.detach())
            acceptances.append(acceptance.detach())
            accuracies.append((drafted == teacher.greedy[rows, taught]).sum() / count)
        return total, torch.stack(losses), torch.stack(accuracies), torch.stack(acceptances)


@dataclass
class Teacher:
    """The target's next-token distribution at each position of a batch, over the draft vocabulary."""

    probs: torch.Tensor  # [B, T, draft] float32: restricted to the draft vocabulary and renormalised
    mass: torch.Tensor  # [B, T] float32: the target's probability of the draft vocabulary as a whole
    greedy: torch.Tensor  # [B, T] the draft id of the most likely draft token
    in_draft_vocab: torch.Tensor  # [B, T] bool: the target's greedy token is in the draft vocabulary

    @classmethod
    def from_states(cls, rows: torch.Tensor, t2d: torch.Tensor, hidden, target_token, logsumexp) -> "Teacher":
        """rows [draft, H]: lm_head's rows of the draft tokens (Target.lm_head_rows); hidden
        [B, T, H] the target's final states, target_token and logsumexp [B, T] their stats.
        The whole-vocabulary probabilities of the draft tokens are probs * mass."""
        logits = (hidden.to(rows.dtype) @ rows.T).float()
        draft_logsumexp = torch.logsumexp(logits, -1)
        return cls(torch.softmax(logits, -1), torch.exp(draft_logsumexp - logsumexp.float()).clamp_max(1),
                   logits.argmax(-1), t2d[target_token])


def length_bucketed_batches(lengths: list[int], batch_size: int, generator: torch.Generator,
                            bucket: int = 32) -> list[list[int]]:
    """One pass over the data in batches of similar lengths, so that padding costs little:
    a seeded permutation cut into groups of `bucket` batches, each group sorted by length
    and cut into batches, then all batches shuffled. Every example is in exactly one batch."""
    order = torch.randperm(len(lengths), generator=generator).tolist()
    batches = []
    for start in range(0, len(order), bucket * batch_size):
        group = sorted(order[start : start + bucket * batch_size], key=lambda i: lengths[i])
        batches += [group[b : b + batch_size] for b in range(0, len(group), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def batch_stream(lengths: list[int], batch_size: int, generator: torch.Generator):
    """The batches of pass after pass over the data, each pass in its own seeded order, so
    that skipping the first n gives where step n of a run is."""
    while True:
        yield from reversed(length_bucketed_batches(lengths, batch_size, generator))


def batch_states(target: Target, store: FeatureStore | None, indices: list[int], examples: list[Example], device):
    """Padded batch: input_ids, loss_mask, features, and the target's final hidden states,
    greedy tokens and log-normalisers (from the store when given, else computed now)."""
    ids, loss_mask, attention = pad_batch([examples[i] for i in indices])
    if store is None:
        features, hidden = target.training_states(ids.to(device), attention.to(device))
        # TTTLoss reads the stats only where the next token is learned: the full-vocabulary
        # products skip the prompts and the padding (stored features keep every position's).
        needed = shift(loss_mask.to(device), 1) > 0
        tokens = torch.zeros(needed.shape, dtype=torch.long, device=device)
        normalizers = torch.zeros(needed.shape, dtype=torch.float32, device=device)
        tokens[needed], normalizers[needed] = target.teacher_stats(hidden[needed])
    else:
        stored = [store.states(i) for i in indices]
        features, hidden, tokens, normalizers = (pad_sequence([getattr(s, name) for s in stored], batch_first=True)
                                                 .to(device) for name in STATES)
    return ids.to(device), loss_mask.to(device), features, hidden, tokens, normalizers


def parse_args(argv=None):
    parser = argparse.ArgumentParser(prog="python -m eagle3.train", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True, help="target model directory (or hub id where a network exists)")
    parser.add_argument("--data", nargs="+", default=None,
                        help='JSONL (.gz too): {"text"}, {"conversations"} or {"messages"} per line; several files '
                             "read as one dataset, in the order given (as eagle3.features writes them, one folder a file)")
    parser.add_argument("--features", nargs="+", default=None,
                        help="read examples and target states written by eagle3.features instead of running the "
                             "target on --data; several directories read as one dataset")
    parser.add_argument("--out", required=True, help="where the head is saved, in the published format")
    parser.add_argument("--work", default="runs/head", help="resumable state and CSV log")
    parser.add_argument("--init", default=None, help="start from this head (its weights and draft vocabulary) "
                                                     "instead of a new one, e.g. to go on with more data")
    parser.add_argument("--start-step", type=int, default=0,
                        help="go on with this run at this step from the head in --init (saved at that step; "
                             "--work's progress.json says which) when --work's state.pt is lost, as on a new machine: "
                             "the data order is replayed to the step and the optimiser, whose state is gone, "
                             "starts anew with a warm-up of --warmup steps")
    parser.add_argument("--draft-vocab-size", type=int, default=None,
                        help="default: min(32000, vocab size), or the --init head's; larger than that "
                             "head's widens it (eagle3.train.widen_draft_vocab)")
    parser.add_argument("--max-length", type=int, default=512, help="tokens per example")
    parser.add_argument("--batch-size", type=int, default=8, help="examples per step, over all processes")
    parser.add_argument("--epochs", type=float, default=1.0)
    parser.add_argument("--max-steps", type=int, default=None, help="stop after this many steps (overrides epochs)")
    parser.add_argument("--lr", type=float, default=1e-4)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--grad-clip", type=float, default=0.5)
    parser.add_argument("--eagle-3.1", dest="eagle31", action="store_true",
                        help="a new head with EAGLE 3.1's norms: an RMSNorm on each target feature before fc, and "
                             "each step's output taken after the final norm (vLLM, SGLang and TensorRT-LLM read it)")
    parser.add_argument("--ttt-steps", type=int, default=7)
    parser.add_argument("--decay", type=float, default=0.8)
    parser.add_argument("--loss", default="kl", choices=sorted(OBJECTIVES),
                        help="kl: soft cross-entropy (EAGLE-3's); lk-alpha: -log acceptance; lk-lambda: their blend")
    parser.add_argument("--kl-scale", type=float, default=LKLambda.scale, help="lk-lambda: w = scale * exp(-decay * acceptance)")
    parser.add_argument("--kl-decay", type=float, default=LKLambda.decay, help="lk-lambda: see --kl-scale")
    parser.add_argument("--save-every", type=int, default=200)
    parser.add_argument("--device", default="auto", choices=["auto", "cpu"],
                        help="auto: the accelerator's device (a GPU per process under accelerate launch)")
    parser.add_argument("--dtype", default="auto",
                        help="the target's dtype (auto: bfloat16 where ATen's bfloat16 matmuls are fast: CUDA, AVX-512 BF16, AMX; else float32)")
    parser.add_argument("--no-bf16", action="store_true", help="float32 even where bfloat16 is available")
    parser.add_argument("--save-dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                        help="dtype of the saved head (bfloat16 halves its size)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if (args.data is None) == (args.features is None):
        parser.error("give one of --data and --features")
    if args.start_step and not args.init:
        parser.error("--start-step needs --init: the head saved at that step")
    return args


def main(argv=None) -> int:
    """One process, or one of several under `accelerate launch` (DDP, or FSDP as configured)."""
    from accelerate import Accelerator

    args = parse_args(argv)
    accelerator = Accelerator(cpu=args.device == "cpu")
    main_process, processes = accelerator.is_main_process, accelerator.num_processes
    transformers.set_seed(args.seed)  # the same on every process: same initial head, same data order
    try:
        if args.batch_size < processes:
            raise ValueError(f"batch_size: {args.batch_size} is smaller than the {processes} processes")
        # Training needs no bit-exact one-token arithmetic (eagle3.invariant: row-chunked products,
        # float64 attention), which a bfloat16 CPU target would take: the model's own kernels, as
        # eagle3.features runs.
        target = load_target(args.target, accelerator.device, training_dtype(args.dtype, accelerator.device),
                             attention="sdpa")
        store = FeatureStore(args.features, target) if args.features else None
        examples = ([store.example(i) for i in range(len(store))] if store
                    else [e for path in args.data for e in load_examples(path, target.tokenizer, args.max_length)])
        initial = load_head(args.init, target, torch.float32) if args.init else None
        if initial and args.draft_vocab_size not in (None, initial.config.draft_vocab_size):
            # A larger draft vocabulary widens the head (its known rows kept); a smaller one
            # would drop rows it has learned.
            widen_draft_vocab(initial, target, examples, args.draft_vocab_size)
        if initial and args.eagle31 and not initial.config.fc_norm:
            raise ValueError(f"--eagle-3.1: the head in --init {args.init} has no EAGLE 3.1 norms; "
                             "train a new head with it, or leave it out")
    except (ValueError, FileNotFoundError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    for p in target.model.parameters():
        p.requires_grad_(False)
    device = target.device
    use_bf16 = bf16_supported(device) and not args.no_bf16
    if initial:  # go on from a trained head, with its draft vocabulary
        head, draft_vocab_size = initial, initial.config.draft_vocab_size
    else:
        draft_vocab_size = args.draft_vocab_size or min(32000, target.vocab_size)
        d2t, t2d = build_draft_vocab(examples, target.vocab_size, draft_vocab_size)
        head = new_head(target, draft_vocab_size, args.seed, args.eagle31)
        head.d2t.copy_(d2t)
        head.t2d.copy_(t2d)
    head.to(device).train()

    steps_per_epoch = math.ceil(len(examples) / args.batch_size)
    total_steps = args.max_steps or max(1, round(args.epochs * steps_per_epoch))
    optimizer = adamw(head.parameters(), args.lr)
    generator = torch.Generator().manual_seed(args.seed)
    state_path, step = os.path.join(args.work, "state.pt"), args.start_step
    if args.start_step and os.path.exists(state_path):
        print(f"error: --start-step: {state_path} holds this run's own state; resume from it without "
              "--start-step and --init", file=sys.stderr)
        return 2
    if os.path.exists(state_path):
        state = load_state(state_path, head, optimizer)
        step = state["step"]
        generator.set_state(state["data_rng"])
        if main_process:
            print(f"resumed at step {step}")
    objective = LKLambda(args.kl_scale, args.kl_decay) if args.loss == "lk-lambda" else OBJECTIVES[args.loss]()
    model, optimizer = accelerator.prepare(TTTLoss(head, args.ttt_steps, args.decay, objective), optimizer)
    # Each process learns from its share of the batch; dividing by the global count of learned
    # positions (over the number of processes, which gradient averaging divides by again)
    # makes the update that of the whole batch in one process.
    normalizer = (lambda count: accelerator.reduce(count, "sum") / processes) if processes > 1 else None
    fields = ["step", "epoch", "lr", "loss"] + [f"{name}_{i}" for name in ("loss", "acc", "accept")
                                               for i in range(args.ttt_steps)] + ["seconds"]
    log = CsvLog(os.path.join(args.work, "log.csv"), fields) if main_process else None
    if log:
        log.drop_after(step)
    if main_process:
        print(f"{len(examples)} examples, draft vocabulary {draft_vocab_size} of {target.vocab_size}, "
              f"{total_steps} steps, {processes} process(es), bf16 autocast: {use_bf16}")

    lengths = [len(e.input_ids) for e in examples]
    draft_rows = target.lm_head_rows(torch.arange(draft_vocab_size, device=device) + head.d2t)
    batches = batch_stream(lengths, args.batch_size, generator)
    for _ in range(args.start_step):  # the data order an uninterrupted run would be at
        next(batches)
    if args.start_step and main_process:
        print(f"went on at step {step} from {args.init}, the optimiser anew")
    bar = tqdm(range(step, total_steps), initial=step, total=total_steps, desc="train", dynamic_ncols=True,
               disable=not main_process)
    for step in bar:
        started = time.perf_counter()  # the step's wall time goes to the log: a run's hours are their sum
        indices = next(batches)
        indices = indices[accelerator.process_index :: processes] or indices[:1]
        # A run gone on without its optimiser state warms up again: its moments start at zero.
        lr = cosine_lr(step, total_steps, args.warmup, args.lr)
        if args.start_step:
            lr *= min(1.0, (step - args.start_step + 1) / args.warmup)
        set_lr(optimizer, lr)
        input_ids, loss_mask, features, hidden, tokens, normalizers = batch_states(target, store, indices, examples,
                                                                                   device)
        with torch.no_grad():
            teacher = Teacher.from_states(draft_rows, head.t2d, hidden, tokens, normalizers)
        with autocast(device, use_bf16):
            loss, losses, accuracies, acceptances = model(features, teacher, input_ids, loss_mask, normalizer)
        accelerator.backward(loss)
        accelerator.clip_grad_norm_(model.parameters(), args.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss, losses, accuracies, acceptances = (accelerator.reduce(t.detach(), "mean")
                                                 for t in (loss, losses, accuracies, acceptances))
        done = step + 1
        if main_process:
            bar.set_postfix(loss=f"{loss.item():.3f}", acc="/".join(f"{a:.2f}" for a in accuracies.tolist()))
            log.write(step=done, epoch=f"{done / steps_per_epoch:.3f}", lr=f"{lr:.3e}", loss=f"{loss.item():.4f}",
                      **{f"loss_{i}": f"{v:.4f}" for i, v in enumerate(losses.tolist())},
                      **{f"acc_{i}": f"{v:.4f}" for i, v in enumerate(accuracies.tolist())},
                      **{f"accept_{i}": f"{v:.4f}" for i, v in enumerate(acceptances.tolist())},
                      seconds=f"{time.perf_counter() - started:.3f}")
        if (done % args.save_every == 0 or done == total_steps) and main_process:
            save_state(state_path, head, optimizer, done, data_rng=generator.get_state())
            save_head(head, args.out, DTYPES[args.save_dtype])
            write_progress(args.work, done, total_steps)
        accelerator.wait_for_everyone()
    if main_process:
        print(f"saved the head to {args.out}")
    end_processes(accelerator)
    return 0


def write_progress(work: str, step: int, total_steps: int) -> None:
    """WORK/progress.json: the step the head in --out was saved at, small enough to commit
    where state.pt is not, so that a run whose state.pt is lost can go on from the head
    (--start-step) rather than from the beginning. The head's folder keeps to the published
    format."""
    with written_whole(os.path.join(work, "progress.json")) as temporary, open(temporary, "w") as f:
        json.dump({"step": step, "total_steps": total_steps}, f)


def end_processes(accelerator) -> None:
    """Close a (possibly multi-process) run without hanging at exit. With gloo, the process
    group's worker thread frees the last collective's tensors after the collective returns,
    which takes the GIL; freeing the group (with the DDP model, at exit) joins that thread
    while holding the GIL. Sleeping lets the thread finish first (torch 2.13; hung 1 run in 5
    on a busy 2-core machine without it)."""
    if accelerator.num_processes > 1:
        accelerator.wait_for_everyone()
        time.sleep(0.2)
    accelerator.end_training()


if __name__ == "__main__":
    sys.exit(main())
