"""The model and GPU catalog: complete, sourced, and read the same way as any config.json."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from engine.catalog import (
    catalog_model_entry,
    gpu_names,
    load_gpu,
    load_model,
    model_from_config,
    model_from_fields,
    model_names,
)
from engine.errors import UserError

GIB = 1 << 30
FIXTURES = Path(__file__).parent / "fixtures" / "kv"

ISSUE_MODELS = [
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3-8b",
    "llama-3.1-8b",
    "llama-3-70b",
    "llama-3.1-70b",
    "mistral-7b",
    "mixtral-8x7b",
    "qwen2.5-7b",
    "qwen3-8b",
    "qwen3-14b",
    "qwen3-32b",
    "gemma-2-9b",
    "deepseek-v3",
]
ISSUE_GPUS = [
    "a10g",
    "l4",
    "rtx-3090",
    "rtx-4090",
    "l40s",
    "a100-40gb",
    "a100-80gb",
    "h100-80gb",
    "h200",
    "b200",
    "mi300x",
]


def test_catalog_lists_every_model_and_gpu_of_the_issue():
    assert set(ISSUE_MODELS) <= set(model_names())
    assert set(ISSUE_GPUS) <= set(gpu_names())


@pytest.mark.parametrize("name", ISSUE_MODELS)
def test_parameter_count_from_shapes_matches_the_published_figure(name):
    model = load_model(name)
    published = catalog_model_entry(name)["published"]
    assert abs(model.num_params - published["num_params"]) <= published["precision"]
    if "active_params" in published:
        assert abs(model.active_params - published["active_params"]) <= published["active_precision"]
    else:
        assert model.active_params == model.num_params


def test_parameter_count_to_the_parameter():
    # the safetensors totals of the published checkpoints
    assert load_model("llama-2-7b").num_params == 6_738_415_616
    assert load_model("llama-3-8b").num_params == 8_030_261_248
    assert load_model("mistral-7b").num_params == 7_241_732_096


@pytest.mark.parametrize("name", ISSUE_MODELS)
def test_every_model_figure_has_a_source(name):
    entry = catalog_model_entry(name)
    assert entry["sources"]["config"].startswith("https://huggingface.co/")
    assert entry["sources"]["num_params"]
    assert entry["published"]["source"]
    model = load_model(name)
    assert any(s.startswith("config:") for s in model.sources)


@pytest.mark.parametrize("name", ISSUE_GPUS)
def test_every_gpu_figure_has_a_source_and_is_the_reported_memory(name):
    gpu = load_gpu(name)
    keys = {s.split(":", 1)[0] for s in gpu.sources}
    assert {"memory_bytes", "hbm_bandwidth_bytes_per_s", "bf16_dense_flops"} <= keys
    # what the device reports is a little less than the marketed size (read in GiB)
    assert 0.9 * gpu.marketed_memory_gb * GIB < gpu.memory_bytes < gpu.marketed_memory_gb * GIB
    assert gpu.hbm_bandwidth_bytes_per_s > 1e11 and gpu.bf16_dense_flops > 1e13


def test_a100_80gb_reports_79_15_gib():
    assert load_gpu("a100-80gb").memory_bytes == 84_987_740_160
    assert round(load_gpu("a100-80gb").memory_bytes / GIB, 2) == 79.15


def test_gpu_aliases_and_case():
    assert load_gpu("H100").name == "h100-80gb"
    assert load_gpu("A100").name == "a100-80gb"


def test_unknown_names_suggest_the_nearest():
    with pytest.raises(UserError) as err:
        load_model("llama-3-7b")
    assert "llama-3-8b" in err.value.line() and "\n" not in err.value.line()
    with pytest.raises(UserError) as err:
        load_gpu("h100-80")
    assert "h100-80gb" in err.value.line()


# --- config.json ------------------------------------------------------------------------------


def test_config_json_round_trip_matches_the_catalog_entry():
    from_file = load_model(str(FIXTURES / "llama-3-8b" / "config.json"))
    from_dir = load_model(str(FIXTURES / "llama-3-8b"))
    catalog = load_model("llama-3-8b")
    shape = [f.name for f in fields(catalog) if f.name not in ("name", "sources", "display_name")]
    for attr in shape:
        assert getattr(from_file, attr) == getattr(catalog, attr), attr
    assert from_file == from_dir
    assert from_file.name == "llama-3-8b"
    assert (from_file.num_layers, from_file.num_kv_heads, from_file.head_dim) == (32, 8, 128)


def test_catalog_config_written_out_reads_back_the_same(tmp_path):
    for name in ("gemma-2-9b", "deepseek-v3", "mixtral-8x7b"):
        path = tmp_path / name / "config.json"
        path.parent.mkdir()
        path.write_text(json.dumps(catalog_model_entry(name)["config"]))
        again, catalog = load_model(str(path)), load_model(name)
        assert (again.num_params, again.layer_types, again.head_dim, again.kv_lora_rank) == (
            catalog.num_params,
            catalog.layer_types,
            catalog.head_dim,
            catalog.kv_lora_rank,
        )


def test_config_without_kv_heads_or_head_dim_uses_transformers_defaults():
    model = model_from_config(
        {
            "num_hidden_layers": 2,
            "hidden_size": 512,
            "num_attention_heads": 8,
            "vocab_size": 1000,
            "intermediate_size": 1024,
        },
        "tiny",
    )
    assert (model.num_kv_heads, model.head_dim, model.dtype) == (8, 64, "float32")
    # embeddings 2 × 1000 × 512, per layer 4 × 512² + 3 × 512 × 1024 + 2 × 512, final norm 512
    assert model.num_params == 2 * 1000 * 512 + 2 * (4 * 512**2 + 3 * 512 * 1024 + 1024) + 512


def test_gemma_2_alternates_local_and_global_layers():
    model = load_model("gemma-2-9b")
    assert model.layer_types[:4] == ("sliding_attention", "full_attention") * 2
    assert (model.sliding_attention_layers, model.full_attention_layers) == (21, 21)
    assert model.head_dim == 256 and model.sliding_window == 4096


def test_gemma_3_pattern_and_explicit_layer_types():
    base = {
        "model_type": "gemma3_text",
        "num_hidden_layers": 12,
        "hidden_size": 256,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 64,
        "sliding_window": 512,
        "sliding_window_pattern": 6,
    }
    model = model_from_config(base, "g3")
    assert [i for i, t in enumerate(model.layer_types) if t == "full_attention"] == [5, 11]
    listed = dict(base, layer_types=["full_attention"] * 12)
    assert model_from_config(listed, "g3").sliding_attention_layers == 0


def test_layer_types_must_match_and_be_known():
    base = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 2, "sliding_window": 16}
    with pytest.raises(UserError, match="2 layers"):
        model_from_config(dict(base, layer_types=["full_attention"]), "x")
    with pytest.raises(UserError, match="linear_attention"):
        model_from_config(dict(base, layer_types=["linear_attention"] * 2), "x")


def test_mistral_slides_every_layer_and_qwen2_5_does_not_slide():
    assert load_model("mistral-7b").sliding_attention_layers == 32
    qwen = load_model("qwen2.5-7b")
    assert qwen.sliding_window is None and qwen.sliding_attention_layers == 0


def test_mla_is_one_latent_head():
    model = load_model("deepseek-v3")
    assert model.is_mla and (model.num_kv_heads, model.head_dim) == (1, 576)
    assert model.weight_quant == "fp8"


def test_nested_text_config_is_read():
    config = {
        "model_type": "llava",
        "torch_dtype": "float16",
        "text_config": {
            "num_hidden_layers": 4,
            "hidden_size": 256,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
        },
    }
    model = model_from_config(config, "vlm")
    assert (model.num_layers, model.num_kv_heads, model.dtype) == (4, 2, "float16")


def test_bad_config_files_are_user_errors(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        load_model(str(bad))
    bad.write_text(json.dumps({"hidden_size": 64}))
    with pytest.raises(UserError, match="missing num_hidden_layers"):
        load_model(str(bad))
    with pytest.raises(UserError, match="no such file"):
        load_model(str(tmp_path / "missing" / "config.json"))


# --- inline models ----------------------------------------------------------------------------


def test_inline_model_of_the_lab():
    model = model_from_fields("7B-class", num_layers=32, num_kv_heads=32, head_dim=128, dtype="fp16")
    assert (model.num_attention_heads, model.hidden_size, model.dtype) == (32, 4096, "float16")
    assert model.num_params == 0 and model.layer_types == ("full_attention",) * 32


def test_inline_model_computes_params_when_shapes_are_given():
    model = model_from_fields("llama-2-7b-inline", 32, 32, 128, intermediate_size=11008, vocab_size=32000)
    assert model.num_params == 6_738_415_616


def test_inline_model_rejects_unknown_fields():
    with pytest.raises(UserError) as err:
        model_from_fields("x", 2, 2, 64, kv_heads=4)
    assert err.value.field == "kv_heads"


def test_a_config_whose_heads_do_not_divide_the_hidden_size_is_refused(tmp_path):
    import json

    from engine.errors import UserError

    path = tmp_path / "config.json"
    path.write_text(json.dumps({"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 3}))
    with pytest.raises(UserError) as err:
        load_model(str(path))
    assert err.value.field == "head_dim" and "not a multiple" in err.value.message
