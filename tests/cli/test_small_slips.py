"""Small slips a new user notices: a local config.json named by its folder, an F16 GGUF labelled
fp16, llama.cpp tables without TP, "did you mean" that puts the model typed first."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import ROOT
from tests.gguf_files import write_tiny
from tests.helpers import cli as run

CONFIG = ROOT / "tests/data/reference/configs/HuggingFaceTB__SmolLM2-135M.json"


def test_a_local_config_json_is_named_by_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "mymodel"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(json.loads(CONFIG.read_text())["config"]))
    for given in (folder / "config.json", folder):
        r = run("fit", str(given), "--gpu", "RTX4090")
        assert r.code == 0, r.stderr
        assert r.stdout.startswith("mymodel at 8k context"), r.stdout[:80]


def test_an_f16_gguf_is_labelled_fp16_with_llamacpps_f16_cache(tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "tiny.gguf")
    r = run("fit", str(path), "--ctx", "2k", "--gpu", "RTX4090", "--json")
    data = json.loads(r.stdout)
    assert data["workload"]["weight_dtype"] == "fp16"
    assert data["workload"]["kv_cache_dtype"] == "f16"


def test_llamacpp_tables_do_not_name_a_tensor_parallel(tmp_path: Path) -> None:
    path = write_tiny(tmp_path / "tiny.gguf")
    r = run("fit", str(path), "--ctx", "2k", "--gpu", "RTX4090")
    assert r.code == 0 and "TP=" not in r.stdout, r.stdout


def test_did_you_mean_puts_the_model_typed_first() -> None:
    r = run("fit", "llama3.3")
    assert r.code == 2 and "did you mean Llama-3.3-70B " in r.stderr, r.stderr


#: Engine jargon the default fit/serve output said bare; each now in plain words (the term in
#: parentheses where it helps).
BARE = (
    "Plan: KV pool",
    "KV pool tokens",
    "the engine's budget",
    "+ outside",
    "offloaded layers",
    "by Little's law",
)


def test_default_output_says_engine_terms_in_plain_words() -> None:
    seen = [
        run("fit", "Qwen3-32B", "--ctx", "32k", "--gpu", "H100").stdout,
        run("fit", "Qwen3-32B", "--engine", "llamacpp", "--gpu", "RTX4090", "--gpus", "1").stdout,
        run("serve", "Qwen3-8B", "--gpu", "H100", "--users", "8").stdout,
    ]
    text = " ".join(" ".join(out.split()) for out in seen)
    assert [w for w in BARE if w in text] == []
    assert "KV cache (KV pool)" in text and "(non-torch)" in text


def test_a_yarn_factor_beyond_the_model_cards_is_said() -> None:
    far = run("fit", "Qwen3-32B", "--ctx", "1m")
    assert far.code == 2 and "yarn:32:32768" in far.stderr
    assert "beyond the factor 4 model cards state (131,072 tokens)" in far.stderr
    near = run("fit", "Qwen3-32B", "--ctx", "128k")
    assert near.code == 2 and "yarn:4:32768" in near.stderr and "beyond the factor" not in near.stderr
