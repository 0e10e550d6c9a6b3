"""The context when --ctx is not given (cli/options.DEFAULT_CONTEXT_TOKENS): 8k, or the model's
max_position_embeddings where that is shorter, said on stderr. The default is gpusize's: sizing a
4k model at 8k only repeated vLLM's refusal ("User-specified max_model_len (8192) is greater than the
derived max_model_len", vllm/config/model.py `_get_and_verify_max_len`) of a length nobody asked for.
A context the user gives is kept, and refused as the engine refuses it."""

from __future__ import annotations

import json

import pytest

from gpusize.cli.options import DEFAULT_CONTEXT_TOKENS
from tests.helpers import catalog_spec, cli

SHORT = "Llama-2-70b-hf"  # max_position_embeddings 4096


def test_the_default_is_8k() -> None:
    assert DEFAULT_CONTEXT_TOKENS == 8192
    assert catalog_spec(SHORT).max_position_embeddings == 4096 < DEFAULT_CONTEXT_TOKENS


@pytest.mark.parametrize(
    "args",
    [
        ["fit", SHORT, "--gpu", "H100"],
        ["serve", SHORT, "--gpu", "H100", "--users", "8"],
        ["quote", SHORT, "--users", "8", "--gpu", "H100"],
    ],
    ids=lambda a: a[0],
)
def test_a_short_model_is_sized_at_its_own_positions(args: list[str]) -> None:
    out = cli(*args, "--json")
    assert out.code in (0, 1), out.stderr
    assert json.loads(out.stdout)["workload"]["context_tokens"] == 4096
    assert "--ctx not given: sized at 4,096 tokens" in out.stderr


def test_a_model_with_longer_positions_takes_the_default_silently() -> None:
    out = cli("fit", "Qwen3-8B", "--gpu", "H100", "--json")
    assert out.code == 0 and "--ctx not given" not in out.stderr
    assert json.loads(out.stdout)["workload"]["context_tokens"] == DEFAULT_CONTEXT_TOKENS


def test_a_context_the_user_gives_is_kept_and_refused_as_vllm_refuses_it() -> None:
    out = cli("fit", SHORT, "--gpu", "H100", "--ctx", "8k")
    assert out.code == 2
    assert "User-specified max_model_len (8192) is greater than the derived max_model_len" in out.stderr


def test_which_asks_every_model_for_the_same_context() -> None:
    """`which` is a question over the catalog at one context: a 4k model does not fit an 8k one."""
    out = cli("which", "--gpu", "H100", "--gpus", "8", "--all", "--json")
    rows = {row["name"]: row for row in json.loads(out.stdout)["models"]}
    assert rows[SHORT]["fits"] is False
