"""Chat data with regenerated replies, sharded offline features, and two-process (gloo) training
under `accelerate launch` that matches one process."""

import csv
import gzip
import os
from dataclasses import astuple
import signal
import subprocess
import sys

import pytest
import torch

from eagle3.data import load_examples
from eagle3.features import FeatureStore
from eagle3.target import load_target
from tests.models import make_target, make_tokenizer

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "assets", "data", "chat_sample.jsonl")
TEMPLATE = ("{% for m in messages %}<{{ m.role }}>{{ m.content }}\n{% endfor %}"
            "{% if add_generation_prompt %}<assistant>{% endif %}")


def run(*args, timeout: float = 300):
    """Run a command in a session of its own, so that a timeout ends all of its processes."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": ROOT, "OMP_NUM_THREADS": "1"}
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=ROOT,
                               start_new_session=True)
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"timed out after {timeout} s: {' '.join(args)}\n{output}")
    assert process.returncode == 0, output
    return output


@pytest.fixture(scope="module")
def chat_target(tmp_path_factory):
    root = tmp_path_factory.mktemp("chat")
    tokenizer = make_tokenizer()
    tokenizer.chat_template = TEMPLATE
    target = make_target("llama", vocab_size=len(tokenizer), eos=tokenizer.eos_token_id)
    target.model.save_pretrained(root / "target")
    tokenizer.save_pretrained(root / "target")
    return str(root / "target"), tokenizer, root


@pytest.fixture(scope="module")
def features(chat_target):
    target, _, root = chat_target
    out = str(root / "features")
    log = run(sys.executable, "-m", "eagle3.features", "--target", target, "--data", SAMPLE, "--out", out, "--regenerate",
              "--max-new-tokens", "12", "--shard-size", "4", "--device", "cpu")
    assert "10 examples in 3 shards; 0 already written" in log
    return out


def test_loss_only_on_assistant_turns(chat_target):
    _, tokenizer, _ = chat_target
    for example in load_examples(SAMPLE, tokenizer, 512):
        learned = tokenizer.decode([t for t, m in zip(example.input_ids, example.loss_mask) if m])
        assert learned and "<user>" not in learned and "<system>" not in learned
        assert "How" not in learned and "What" not in learned and "Explain" not in learned  # the questions


def test_features_are_sharded_resumable_and_hold_regenerated_replies(chat_target, features):
    target_dir, tokenizer, _ = chat_target
    store = FeatureStore(features)
    assert len(store) == 10 and len(store.shards) == 3
    both = FeatureStore([features, features])  # two directories read as one dataset, in order
    assert len(both) == 20 and both.example(15) == store.example(5)
    assert all(torch.equal(a, b) for a, b in zip(astuple(both.states(12)), astuple(store.states(2))))
    replies = open(os.path.join(features, "regenerated.jsonl"), encoding="utf-8").read()
    assert "def is_prime" not in replies  # the written answers were replaced by the target's
    example = store.example(5)
    states, n = store.states(5), len(example.input_ids)
    assert states.features.shape == (n, 3 * 64) and states.hidden.shape == (n, 64)
    # The teacher's stats are those of the target's full logits at each position (recomputed here
    # in float32 from the stored states, which the features' run may have made in bfloat16: the
    # greedy token is the argmax or within rounding of it).
    target = load_target(target_dir, "cpu", "float32")
    logits = target.model.lm_head(states.hidden.to(torch.float32)).float()
    chosen = logits.gather(-1, states.target_token[:, None])[:, 0]
    assert (chosen >= logits.max(-1).values - 0.05).all()
    assert torch.allclose(states.logsumexp, torch.logsumexp(logits, -1), atol=0.05)

    shard = os.path.join(features, "shard-00001.safetensors")
    before = FeatureStore(features).states(5)
    os.remove(shard)
    with pytest.raises(FileNotFoundError, match="1 shards missing"):
        FeatureStore(features)
    log = run(sys.executable, "-m", "eagle3.features", "--target", target_dir, "--data", SAMPLE, "--out", features,
              "--regenerate", "--max-new-tokens", "12", "--shard-size", "4", "--device", "cpu")
    assert "2 already written" in log
    after = FeatureStore(features).states(5)
    assert all(torch.equal(a, b) for a, b in zip(astuple(before), astuple(after)))


def losses(work):
    with open(os.path.join(work, "log.csv"), encoding="utf-8") as f:
        return [[float(row[k]) for k in row if k.startswith("loss")] for row in csv.DictReader(f)]


def test_two_processes_train_like_one(chat_target, features):
    target, _, root = chat_target
    common = ["--target", target, "--features", features, "--max-steps", "6", "--batch-size", "4", "--lr", "3e-3",
              "--warmup", "2", "--ttt-steps", "3", "--no-bf16", "--device", "cpu", "--draft-vocab-size", "200"]
    run(sys.executable, "-m", "eagle3.train", *common, "--out", str(root / "one"), "--work", str(root / "work-one"))
    # Without a GPU, --multi_gpu makes accelerate start CPU processes that talk over gloo.
    log = run(sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
              "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "eagle3.train", *common,
              "--out", str(root / "two"), "--work", str(root / "work-two"))
    assert "2 process(es)" in log
    one, two = losses(root / "work-one"), losses(root / "work-two")
    assert len(one) == len(two) == 6  # one log, written by the first process only
    assert one[-1][0] < one[0][0]
    for a, b in zip(one, two):
        assert a == pytest.approx(b, rel=2e-3, abs=2e-4)
    weights = [torch.load(root / w / "state.pt", weights_only=True)["model"] for w in ("work-one", "work-two")]
    for key in weights[0]:
        assert torch.allclose(weights[0][key].float(), weights[1][key].float(), atol=1e-4), key
    assert sorted(os.listdir(root / "two")) == ["config.json", "model.safetensors"]


def test_replies_come_in_resumable_chunks_at_temperatures_in_turn(chat_target, tmp_path, monkeypatch):
    import eagle3.features
    from eagle3.data import read_jsonl

    target = load_target(chat_target[0], "cpu", "float32")
    calls, generate = [], eagle3.features.generate_replies

    def recorded(target, prompts, max_new_tokens, sampling, *args, **kwargs):
        calls.append((len(prompts), sampling.temperature))
        return generate(target, prompts, max_new_tokens, sampling, *args, **kwargs)

    monkeypatch.setattr(eagle3.features, "generate_replies", recorded)
    out = str(tmp_path / "replies")
    first = eagle3.features.regenerate_file(target, SAMPLE, out, 6, [0.0, 0.9], 4, seed=0, chunk_size=4, limit=8)
    assert len(read_jsonl(first)) == 8 and sorted(os.listdir(os.path.join(out, "regenerated"))) == [
        "part-00000.jsonl.gz", "part-00001.jsonl.gz"]
    assert {t for _, t in calls[:1]} == {0.0} and calls[-1][1] == 0.9  # chunk 0 greedy, chunk 1 sampled
    made = gzip.open(os.path.join(out, "regenerated", "part-00000.jsonl.gz"), "rt", encoding="utf-8").read()
    calls.clear()
    whole = eagle3.features.regenerate_file(target, SAMPLE, out, 6, [0.0, 0.9], 4, seed=0, chunk_size=4)
    assert sum(n for n, _ in calls) >= 2 and all(n <= 2 for n, _ in calls)  # only the last chunk's 2 records
    records = read_jsonl(whole)
    assert len(records) == 10 and gzip.open(os.path.join(out, "regenerated", "part-00000.jsonl.gz"), "rt").read() == made
    assert all(m["content"] != "" for r in records for m in r["conversations"] if m["role"] == "assistant")
    # More data later: --skip makes only the chunks after it, numbered as in the whole file.
    calls.clear()
    more = str(tmp_path / "more")
    added = eagle3.features.regenerate_file(target, SAMPLE, more, 6, [0.0, 0.9], 4, seed=0, chunk_size=4, skip=4, limit=8)
    assert [r["conversations"][0] for r in read_jsonl(added)] == [r["conversations"][0] for r in records[4:8]]
    assert os.listdir(os.path.join(more, "regenerated")) == ["part-00001.jsonl.gz"] and {t for _, t in calls} == {0.9}
    with pytest.raises(ValueError, match="skip: 3 is not a multiple of the chunk size 4"):
        eagle3.features.regenerate_file(target, SAMPLE, more, 6, [0.0], 4, seed=0, chunk_size=4, skip=3)
