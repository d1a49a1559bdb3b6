"""The head trainer: training-time-test attention, draft vocabulary, data, a short real run."""

import json
import math

import pytest
import torch

from eagle3 import GenerationConfig, HeadDrafter, TreeConfig, collect, decode, load_head
from eagle3.data import Example, encode_record, load_examples
from eagle3.head import UnrolledKV
from eagle3.kv_cache import KVCache
from eagle3.masks import layer_mask
from eagle3.train import build_draft_vocab, main as train_main, widen_draft_vocab
from tests.models import make_head, make_target


def test_unrolled_attention_equals_tree_attention():
    """Step i of the unroll at anchor t sees what a depth-i tree node sees at inference:
    step-0 keys at positions <= t and its own chain of steps 1..i at the same anchor."""
    target = make_target("llama", vocab_size=32)
    head = make_head(target, draft_vocab_size=24)
    torch.manual_seed(0)
    length, steps = 9, 4
    hidden0 = torch.randn(1, length, 64)
    tokens = torch.randint(0, 32, (steps, 1, length))
    positions = torch.arange(length)[None]

    unrolled, kv, hidden = [], UnrolledKV(), hidden0
    for i in range(steps):
        hidden = head(hidden, tokens[i], positions + i, None, kv)
        unrolled.append(hidden)

    cache, hidden = KVCache(1, length * steps), hidden0  # the same computation with a dense mask
    for i in range(steps):
        allowed = torch.zeros(length, length * (i + 1), dtype=torch.bool)
        allowed[:, :length] = torch.ones(length, length, dtype=torch.bool).tril()
        for j in range(1, i + 1):
            allowed[:, j * length : (j + 1) * length] |= torch.eye(length, dtype=torch.bool)
        hidden = head(hidden, tokens[i], positions + i, layer_mask(allowed, torch.float32), cache.layers[0])
        # relative: the states grow to ~20 by step 3, and float32 kernels (AVX-512 / AMX) round differently
        torch.testing.assert_close(hidden, unrolled[i], rtol=1e-4, atol=1e-4, msg=f"step {i}")


def test_draft_vocabulary_invariants():
    examples = [Example([5, 5, 5, 7, 7, 9, 1], [0, 1, 1, 1, 1, 1, 1]), Example([9, 9, 3], [1, 1, 1])]
    d2t, t2d = build_draft_vocab(examples, vocab_size=12, draft_vocab_size=4)
    target_ids = torch.arange(4) + d2t
    assert target_ids.tolist() == sorted(set(target_ids.tolist()))  # ascending, distinct
    assert t2d.sum() == 4 and t2d[target_ids].all()
    assert set(target_ids.tolist()) == {5, 7, 9, 1}  # the most frequent learned tokens
    d2t, t2d = build_draft_vocab(examples, vocab_size=12, draft_vocab_size=8)  # more slots than seen tokens
    assert t2d.sum() == 8 and {1, 3, 5, 7, 9} <= set((torch.arange(8) + d2t).tolist())
    with pytest.raises(ValueError, match="draft_vocab_size: 20"):
        build_draft_vocab(examples, 12, 20)


def test_records_and_loss_masks(tokenizer):
    text = encode_record({"text": "def f():\n    pass\n"}, tokenizer, 100)
    assert len(text.input_ids) == len(text.loss_mask) and all(text.loss_mask)
    chat = encode_record({"conversations": [{"from": "human", "value": "add two numbers"},
                                            {"from": "gpt", "value": "def add(a, b):\n    return a + b"}]}, tokenizer, 100)
    learned = tokenizer.decode([t for t, m in zip(chat.input_ids, chat.loss_mask) if m])
    assert learned.strip() == "def add(a, b):\n    return a + b"
    tokenizer.chat_template = ("{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}</{{ m['role'] }}>{% endfor %}"
                               "{% if add_generation_prompt %}<assistant>{% endif %}")
    try:
        chat = encode_record({"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "for i in x"}]},
                             tokenizer, 100)
    finally:
        tokenizer.chat_template = None
    learned = tokenizer.decode([t for t, m in zip(chat.input_ids, chat.loss_mask) if m])
    assert "for i in x" in learned and "hi" not in learned


def test_bad_data_files_are_named(tmp_path, tokenizer):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x = 1"}\n{not json}\n')
    with pytest.raises(ValueError, match="bad.jsonl:2: not valid JSON"):
        load_examples(str(bad), tokenizer, 64)
    bad.write_text('{"question": "x"}\n')
    with pytest.raises(ValueError, match="neither 'text' nor 'conversations'"):
        load_examples(str(bad), tokenizer, 64)


def test_trainer_smoke(tmp_path, tokenizer, capsys):
    """A few steps on a tiny random target: loss goes down, the head saves, loads and decodes."""
    target = make_target("llama", vocab_size=len(tokenizer), eos=tokenizer.eos_token_id, logit_scale=8.0)
    target.model.save_pretrained(tmp_path / "target")
    tokenizer.save_pretrained(tmp_path / "target")
    lines = ["def add(a, b):\n    return a + b\n", "for i in range(10):\n    print(i)\n", "class Point:\n    pass\n"]
    for part, numbers in (("a", range(12)), ("b", range(12, 24))):  # two files, read as one dataset
        with open(tmp_path / f"data-{part}.jsonl", "w") as f:
            for i in numbers:
                f.write(json.dumps({"text": "".join(lines[(i + j) % 3] for j in range(4))}) + "\n")
    data = [str(tmp_path / "data-a.jsonl"), str(tmp_path / "data-b.jsonl")]
    args = ["--target", str(tmp_path / "target"), "--data", *data, "--out", str(tmp_path / "head"),
            "--work", str(tmp_path / "work"), "--draft-vocab-size", "120", "--batch-size", "4", "--lr", "3e-3",
            "--warmup", "2", "--ttt-steps", "3", "--save-every", "10", "--device", "cpu"]
    assert train_main(args + ["--max-steps", "20"]) == 0
    log = (tmp_path / "work" / "log.csv").read_text().splitlines()
    header, rows = log[0].split(","), [dict(zip(log[0].split(","), r.split(","))) for r in log[1:]]
    assert header[:4] == ["step", "epoch", "lr", "loss"] and "acc_2" in header and header[-1] == "seconds"
    assert all(float(r["seconds"]) > 0 for r in rows)
    assert rows[5]["epoch"] == "1.000"  # 6 steps of 4 take one pass over both files' 24 examples
    first, last = sum(float(r["loss"]) for r in rows[:3]) / 3, sum(float(r["loss"]) for r in rows[-3:]) / 3
    assert last < first - 0.05, (first, last)

    lk = [a if a != str(tmp_path / "work") else str(tmp_path / "work-lk") for a in args]
    assert train_main(lk + ["--max-steps", "3", "--loss", "lk-alpha"]) == 0  # an LK loss trains too

    # A run cut off after its last save (step 20) had logged a step beyond it; resuming runs
    # that step again and logs it once.
    with open(tmp_path / "work" / "log.csv", "a") as f:
        f.write(",".join(["21"] + ["0"] * (len(header) - 1)) + "\n")
    assert train_main(args + ["--max-steps", "24"]) == 0  # resumes from its own state
    steps = [r.split(",")[0] for r in (tmp_path / "work" / "log.csv").read_text().splitlines()[1:]]
    assert steps == [str(s) for s in range(1, 25)]
    # A new machine has the head and --work's progress.json but not its state.pt: --start-step
    # goes on at the head's step, with the learning rate warming up again from a fresh optimiser.
    assert json.loads((tmp_path / "work" / "progress.json").read_text()) == {"step": 24, "total_steps": 24}
    gone_on = [a if a != str(tmp_path / "work") else str(tmp_path / "work-new") for a in args]
    assert train_main(gone_on + ["--max-steps", "26", "--init", str(tmp_path / "head"), "--start-step", "24"]) == 0
    rows = [r.split(",") for r in (tmp_path / "work-new" / "log.csv").read_text().splitlines()[1:]]
    assert [r[0] for r in rows] == ["25", "26"] and float(rows[0][2]) < float(rows[1][2])
    assert train_main(args + ["--max-steps", "26", "--init", str(tmp_path / "head"), "--start-step", "24"]) == 2
    assert "holds this run's own state" in capsys.readouterr().err

    from eagle3.target import load_target

    loaded_target = load_target(str(tmp_path / "target"), "cpu", "float32")
    head = load_head(str(tmp_path / "head"), loaded_target)
    assert head.config.draft_vocab_size == 120 and int(head.t2d.sum()) == 120
    prompt = tokenizer("def add(a, b):\n").input_ids
    result = collect(decode(loaded_target, prompt, HeadDrafter(head, TreeConfig(3, 3, 8)), GenerationConfig(24)))
    want = loaded_target.model.generate(torch.tensor([prompt]), max_new_tokens=24, do_sample=False)[0, len(prompt):]
    assert result.output_ids == want.tolist()[: len(result.output_ids)]
    assert result.stop_reason == "eos" or len(result.output_ids) == 24

    # --init goes on from the saved head: same draft vocabulary, a loss where the first run
    # ended (not where a new head starts); a larger vocabulary widens it, a smaller one is refused.
    elsewhere = {str(tmp_path / "head"): str(tmp_path / "more"), str(tmp_path / "work"): str(tmp_path / "work-more")}
    more = [elsewhere.get(a, a) for a in args] + ["--init", str(tmp_path / "head")]
    assert train_main(more + ["--max-steps", "2"]) == 0
    rows = (tmp_path / "work-more" / "log.csv").read_text().splitlines()[1:]
    assert float(rows[0].split(",")[3]) < first - 0.05
    again = load_head(str(tmp_path / "more"), loaded_target)
    assert torch.equal(again.d2t, head.d2t) and torch.equal(again.t2d, head.t2d)
    wider = [a if a != "120" else "140" for a in more] + ["--max-steps", "1"]
    wider[wider.index(str(tmp_path / "more"))] = str(tmp_path / "wider")
    wider[wider.index(str(tmp_path / "work-more"))] = str(tmp_path / "work-wider")
    assert train_main(wider) == 0
    widened = load_head(str(tmp_path / "wider"), loaded_target)
    assert widened.config.draft_vocab_size == 140 and int(widened.t2d.sum()) == 140
    assert bool(widened.t2d[head.t2d].all())  # every token the head drafted, it still drafts
    other = [a if a != "120" else "100" for a in more] + ["--max-steps", "1"]
    assert train_main(other) == 2
    assert "draft_vocab_size: 100 is not larger than the head's 120" in capsys.readouterr().err


def test_widening_the_draft_vocabulary_keeps_the_known_rows_and_maps_the_new():
    """The head's own rows stay; a new token's row is the target's row carried by the map the
    known rows follow (here a linear map but for one row, which least squares recovers)."""
    target = make_target("llama", vocab_size=200)
    examples = [Example(list(range(200)) + list(range(150)), [1] * 350)]  # tokens < 150 most frequent
    head = make_head(target, draft_vocab_size=80)
    d2t, t2d = build_draft_vocab([Example(list(range(100, 180)), [1] * 80)], 200, 80)  # tokens 100..179
    head.d2t.copy_(d2t)
    head.t2d.copy_(t2d)
    carry = torch.randn(target.hidden_size, target.hidden_size)
    known = torch.arange(80) + d2t
    with torch.no_grad():
        head.lm_head.weight.copy_(target.lm_head_rows(known) @ carry)
        head.lm_head.weight[0] += 0.01  # one row off the map: widening must keep it as it is
    hidden = torch.randn(5, target.hidden_size)
    before = head.lm_head(hidden)

    widen_draft_vocab(head, target, examples, 120)
    tokens = torch.arange(120) + head.d2t
    assert head.config.draft_vocab_size == 120 and head.lm_head.weight.shape == (120, target.hidden_size)
    assert bool(head.t2d[known].all()) and int(head.t2d.sum()) == 120
    assert set(tokens.tolist()) == set(range(100, 180)) | set(range(40))  # then the most frequent, lowest first
    is_known = torch.isin(tokens, known)
    torch.testing.assert_close(head.lm_head(hidden)[:, is_known], before)  # the known rows, unchanged
    torch.testing.assert_close(head.lm_head.weight[~is_known], target.lm_head_rows(tokens[~is_known]) @ carry,
                               rtol=0.01, atol=0.01)
    with pytest.raises(ValueError, match="not larger than the head's 120"):
        widen_draft_vocab(head, target, examples, 100)


def test_training_runs_the_target_on_its_own_kernels(tmp_path, tokenizer, monkeypatch):
    """A bfloat16 CPU target would decode with eagle3.invariant's arithmetic; training, which
    needs no bit-exact one-token steps, runs the model's own (faster) kernels, as features do."""
    import eagle3.target

    def refuse(model):
        raise AssertionError("the trainer's target took the invariant arithmetic")

    target = make_target("llama", vocab_size=len(tokenizer), eos=tokenizer.eos_token_id)
    target.model.save_pretrained(tmp_path / "target")
    tokenizer.save_pretrained(tmp_path / "target")
    monkeypatch.setattr(eagle3.target, "make_row_invariant", refuse)
    (tmp_path / "data.jsonl").write_text("\n".join(json.dumps({"text": f"def f{i}(x):\n    return x + {i}\n"})
                                                  for i in range(4)) + "\n")
    assert train_main(["--target", str(tmp_path / "target"), "--data", str(tmp_path / "data.jsonl"),
                       "--out", str(tmp_path / "head"), "--work", str(tmp_path / "work"), "--draft-vocab-size", "120",
                       "--batch-size", "2", "--ttt-steps", "2", "--max-steps", "1", "--device", "cpu",
                       "--dtype", "bfloat16"]) == 0


def test_lk_losses_raise_the_acceptance_they_optimise():
    """LK-alpha is -log(acceptance), LK-lambda its blend with the cross-entropy; under each
    objective, gradient steps on a draft's logits raise sum_v min(p, q)."""
    from eagle3.train import ForwardKL, LKAlpha, LKLambda

    torch.manual_seed(0)
    p = torch.softmax(torch.randn(16, 10) * 2, -1)  # the target, at 16 positions
    for objective in (ForwardKL(), LKAlpha(), LKLambda()):
        logits = torch.zeros(16, 10, requires_grad=True)
        optimizer = torch.optim.SGD([logits], lr=2.0)
        acceptance = lambda: torch.minimum(p, logits.detach().softmax(-1)).sum() / 16  # noqa: E731
        before = float(acceptance())
        for _ in range(50):
            logp = logits.log_softmax(-1)
            loss = objective(-(p * logp).sum() / 16, torch.minimum(p, logp.exp()).sum() / 16)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        assert float(acceptance()) > before + 0.2, objective
    accept = torch.tensor(0.25)
    assert torch.equal(LKAlpha()(torch.tensor(3.0), accept), -torch.log(accept))
    weight = math.exp(-3.0 * 0.25)
    assert abs(float(LKLambda(1.0, 3.0)(torch.tensor(2.0), accept)) - (weight * 2.0 + (1 - weight) * 0.75)) < 1e-6


def test_teacher_agreement_equals_its_autograd_composition(monkeypatch):
    """The blocked cross-entropy, acceptance and argmax, and their hand-written gradient, are
    those of log_softmax, exp and minimum under autograd, for float32 and bfloat16 logits."""
    from eagle3.train import TeacherAgreement

    monkeypatch.setattr(TeacherAgreement, "BLOCK_ELEMENTS", 3 * 40)  # blocks of 3 rows
    generator = torch.Generator().manual_seed(0)
    probs = torch.softmax(torch.randn(2, 9, 40, generator=generator) * 3, -1)  # the teacher, [B, T, draft]
    rows, columns = torch.tensor([0, 0, 1, 1, 1, 0, 1, 0]), torch.tensor([1, 2, 0, 4, 8, 7, 3, 5])
    mass = torch.rand(8, generator=generator) * 0.5 + 0.5
    for dtype in (torch.float32, torch.bfloat16):
        logits = (torch.randn(8, 40, generator=generator) * 4).to(dtype).requires_grad_()
        before = logits.detach().clone()
        cross_entropy, acceptance, drafted = TeacherAgreement.apply(logits, probs, mass, rows, columns)
        (0.7 * cross_entropy - 1.3 * acceptance).backward()
        assert torch.equal(logits.detach(), before)  # read, never written

        reference = logits.detach().clone().requires_grad_()
        logp = torch.log_softmax(reference.float(), -1)
        wanted = probs[rows, columns]
        expected = (-(wanted * logp).sum(), torch.minimum(wanted * mass[:, None], logp.exp()).sum())
        (0.7 * expected[0] - 1.3 * expected[1]).backward()
        torch.testing.assert_close(cross_entropy, expected[0])
        torch.testing.assert_close(acceptance, expected[1])
        assert torch.equal(drafted, logp.argmax(-1))
        torch.testing.assert_close(logits.grad, reference.grad)


def test_length_bucketed_batches_cover_each_example_once():
    from eagle3.train import length_bucketed_batches

    lengths = torch.randint(1, 500, (203,), generator=torch.Generator().manual_seed(0)).tolist()
    batches = length_bucketed_batches(lengths, 8, torch.Generator().manual_seed(1), bucket=4)
    assert sorted(i for batch in batches for i in batch) == list(range(203))
    assert all(1 <= len(batch) <= 8 for batch in batches)
    # Within a batch lengths are close: the spread is far below that of random batches.
    spread = sum(max(lengths[i] for i in b) - min(lengths[i] for i in b) for b in batches) / len(batches)
    assert spread < 150
    again = length_bucketed_batches(lengths, 8, torch.Generator().manual_seed(1), bucket=4)
    assert again == batches


def test_online_stats_where_learned_give_the_loss_of_stats_everywhere():
    """Online, the target's greedy token and log-normaliser are computed only where the next
    token is learned; the loss of every unrolled step is that of stats at every position."""
    from eagle3.data import Example
    from eagle3.train import TTTLoss, Teacher, batch_states

    target = make_target("llama", vocab_size=40, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=12)
    examples = [Example(list(range(3, 3 + n)), [0] * prompt + [1] * (n - prompt)) for n, prompt in ((14, 5), (9, 3), (11, 7))]
    ids, loss_mask, features, hidden, tokens, normalizers = batch_states(target, None, [0, 1, 2], examples, "cpu")
    everywhere = target.teacher_stats(hidden.flatten(0, 1))
    rows = target.lm_head_rows(torch.arange(12) + head.d2t)
    loss = TTTLoss(head, steps=3)
    online = loss(features, Teacher.from_states(rows, head.t2d, hidden, tokens, normalizers), ids, loss_mask)
    full = loss(features, Teacher.from_states(rows, head.t2d, hidden, *(t.view(ids.shape) for t in everywhere)),
                ids, loss_mask)
    for a, b in zip(online, full):
        assert torch.allclose(a, b, rtol=1e-5, atol=1e-6), (a, b)
    assert (normalizers == 0).any()  # some positions were skipped


def test_unrolled_steps_skip_anchors_that_learn_nothing():
    """Steps after the first run only the anchors whose chain still reaches a learned token;
    the loss and its gradients are those of every anchor at every step (computed here as
    the unpruned unroll: each step over the whole batch, the loss read where learned)."""
    from eagle3.data import Example
    from eagle3.train import TTTLoss, Teacher, batch_states, shift

    target = make_target("llama", vocab_size=40, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=12)
    examples = [Example(list(range(3, 3 + n)), [0] * prompt + [1] * (n - prompt)) for n, prompt in ((14, 5), (9, 3), (11, 7))]
    ids, loss_mask, features, hidden, tokens, normalizers = batch_states(target, None, [0, 1, 2], examples, "cpu")
    teacher = Teacher.from_states(target.lm_head_rows(torch.arange(12) + head.d2t), head.t2d, hidden, tokens, normalizers)
    steps, decay = 4, 0.8

    pruned = TTTLoss(head, steps, decay)(features, teacher, ids, loss_mask)[0]
    pruned_grads = torch.autograd.grad(pruned, list(head.parameters()))

    positions, kv, state, dense = torch.arange(ids.shape[1])[None], UnrolledKV(), head.project(features), 0.0
    for i in range(steps):
        state = head(state, shift(ids, 1 + i), positions + i, None, kv)
        rows, anchors = ((shift(loss_mask, 2 + i) > 0) & shift(teacher.in_draft_vocab, 1 + i, fill=False)).nonzero(as_tuple=True)
        logp = torch.log_softmax(head.logits(state[rows, anchors]).float(), -1)
        dense = dense + decay**i * -(teacher.probs[rows, anchors + 1 + i] * logp).sum() / max(len(rows), 1)
    dense_grads = torch.autograd.grad(dense, list(head.parameters()))

    torch.testing.assert_close(pruned, dense, rtol=1e-5, atol=1e-6)
    for a, b in zip(pruned_grads, dense_grads):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    learned_last = (shift(loss_mask, 2 + steps - 1) > 0) & shift(teacher.in_draft_vocab, steps, fill=False)
    assert learned_last.sum() < loss_mask.numel() // 2  # the last step runs far fewer anchors than the batch has


def test_teacher_over_draft_rows_equals_full_logits():
    from eagle3.train import Teacher

    target = make_target("llama", vocab_size=40, logit_scale=4.0)
    head = make_head(target, draft_vocab_size=12)
    hidden = torch.randn(2, 5, target.hidden_size)
    tokens, normalizers = target.teacher_stats(hidden.flatten(0, 1), chunk=3)
    full = target.model.lm_head(hidden).float()  # [2, 5, 40]
    assert torch.equal(tokens.view(2, 5), full.argmax(-1))
    assert torch.allclose(normalizers.view(2, 5), torch.logsumexp(full, -1))
    draft_ids = torch.arange(12) + head.d2t
    teacher = Teacher.from_states(target.lm_head_rows(draft_ids), head.t2d, hidden, tokens.view(2, 5),
                                  normalizers.view(2, 5))
    restricted = full[..., draft_ids]
    assert torch.allclose(teacher.probs, torch.softmax(restricted, -1), atol=1e-6)
    assert torch.allclose(teacher.probs * teacher.mass[..., None], torch.softmax(full, -1)[..., draft_ids], atol=1e-6)
    assert torch.equal(teacher.greedy, restricted.argmax(-1))
    assert torch.equal(teacher.in_draft_vocab, head.t2d[full.argmax(-1)])
