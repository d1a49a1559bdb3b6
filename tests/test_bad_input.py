"""Bad input to the library and the CLI: an error that names the problem and the accepted range."""

import pytest

from eagle3 import GenerationConfig, HeadDrafter, SamplingConfig, TreeConfig, collect, collect_rows, decode
from tests.models import make_head, make_target
from tests.test_cli import cli_in_process

PROMPT = [1, 2, 3, 4]

BAD_SETTINGS = [  # (tree, generation config, message)
    (TreeConfig(0, 3, 16), GenerationConfig(8), r"depth: 0 is outside \[1, 64\]"),
    (TreeConfig(65, 3, 16), GenerationConfig(8), r"depth: 65 is outside \[1, 64\]"),
    (TreeConfig(4, 0, 16), GenerationConfig(8), r"top_k: 0 is outside \[1, 64\]"),
    (TreeConfig(4, 30, 40), GenerationConfig(8), "top_k: 30 exceeds the head's draft vocabulary of 24"),
    (TreeConfig(4, 3, 1), GenerationConfig(8), r"total_tokens: 1 is outside \[2, 1024\]"),
    (TreeConfig(4, 8, 3), GenerationConfig(8), "total_tokens: 3 cannot hold the root and the top_k=8 first drafts; "
                                               "use total_tokens >= 9"),
    (TreeConfig(), GenerationConfig(0), r"max_new_tokens: 0 is outside \[1, "),
    (TreeConfig(), GenerationConfig(-5), r"max_new_tokens: -5 is outside \[1, "),
    (TreeConfig(), GenerationConfig(10**9), r"max_new_tokens: 1000000000 is outside \[1, "),
    (TreeConfig(), GenerationConfig(8, SamplingConfig(-0.5)), r"temperature: -0.5 is outside \[0, 100\]"),
    (TreeConfig(), GenerationConfig(8, SamplingConfig(float("nan"))), r"temperature: nan is outside"),
    (TreeConfig(), GenerationConfig(8, SamplingConfig(1.0, 0.0)), r"top_p: 0.0 is outside \(0, 1\]"),
    (TreeConfig(), GenerationConfig(8, SamplingConfig(1.0, 1.5)), r"top_p: 1.5 is outside \(0, 1\]"),
    (TreeConfig(None, 3, 16), GenerationConfig(8), "depth: None is not an integer"),
    (TreeConfig(4, 3, 16.5), GenerationConfig(8), "total_tokens: 16.5 is not an integer"),
    (TreeConfig(), GenerationConfig(None), "max_new_tokens: None is not an integer"),
    (TreeConfig(), GenerationConfig(8, SamplingConfig("hot")), "temperature: 'hot' is not a number"),
]


@pytest.fixture(scope="module")
def pair():
    target = make_target("llama", vocab_size=32)
    return target, make_head(target, draft_vocab_size=24)


@pytest.mark.parametrize("tree, config, message", BAD_SETTINGS)
def test_bad_settings_are_named(pair, tree, config, message):
    target, head = pair
    with pytest.raises(ValueError, match=message):
        collect(decode(target, PROMPT, HeadDrafter(head, tree), config))
    with pytest.raises(ValueError, match=message):
        collect_rows(decode(target, [PROMPT, PROMPT], HeadDrafter(head, tree), config))
    if tree == TreeConfig():  # the plain decoder checks the same generation settings
        with pytest.raises(ValueError, match=message):
            collect(decode(target, PROMPT, None, config))


def test_bad_prompts_are_named(pair):
    target, head = pair
    for prompt, message in (([], "prompt: empty"), ([1, 99], r"prompt: token id 99 is outside the vocabulary \[0, 32\)"),
                            ("text", "prompt: text was given but the target has no tokenizer"),
                            (list(range(1, 30)) * 2, "prompt: 58 tokens leave no room in the 48-token context")):
        with pytest.raises(ValueError, match=message):
            collect(decode(target, prompt, HeadDrafter(head, TreeConfig(2, 2, 4)), GenerationConfig(8, max_context=48)))


def test_cli_names_bad_settings(model_dirs, capsys):
    target, head = model_dirs
    common = ["--target", target, "--draft", head, "--prompt", "x", "--device", "cpu"]
    for args, message in ((["--max-new-tokens", "0"], "max_new_tokens: 0 is outside"),
                          (["--top-k", "8", "--total-tokens", "3"], "use total_tokens >= 9"),
                          (["--temperature", "-1"], "temperature: -1.0 is outside"),
                          (["--prompt", ""], "prompt: empty")):
        result = cli_in_process(capsys, *common, *args)
        assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr, result.stderr
