"""The capacity sweep: grid, execution (local pool, Ray), resume, pricing, Pareto, charts, CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from engine import cli
from engine.errors import UserError
from engine.experiments import sweep as experiment
from engine.experiments.sweep import SweepSection
from engine.sections import SpecLocation
from engine.sweep import adapter, analysis, execute
from engine.sweep.grid import expand, point_key
from engine.sweep.prices import PRICES_FILE, load_prices
from engine.sweep.store import ResultStore
from engine.sweep.table import to_csv

from helpers import SMALL_SWEEP as SMALL
from helpers import dump_yaml, load_yaml
from helpers import sweep_section as section


def run(sec: SweepSection, tmp_path: Path, **kwargs: Any) -> dict[str, Any]:
    return experiment.run(sec, SpecLocation(spec_path=tmp_path / "spec.yaml"), full=True, **kwargs)


# ---- the grid ---------------------------------------------------------------------------------


def test_points_come_in_product_order_with_defaults():
    points = expand(section().grid)
    assert len(points) == 8
    assert [(p.gpu, p.max_num_seqs, p.arrival_rate) for p in points[:4]] == [
        ("h100-80gb", 4, 5),
        ("h100-80gb", 4, 50),
        ("h100-80gb", 16, 5),
        ("h100-80gb", 16, 50),
    ]
    assert {(p.tp, p.replicas, p.router, p.kv_dtype) for p in points} == {(1, 1, "round_robin", "auto")}


def test_point_key_depends_on_point_and_context_only():
    p, q = expand(section().grid)[:2]
    assert point_key(p, {"a": 1}) == point_key(p, {"a": 1})
    assert point_key(p, {"a": 1}) != point_key(q, {"a": 1})
    assert point_key(p, {"a": 1}) != point_key(p, {"a": 2})


@pytest.mark.parametrize(
    "change, field, message",
    [
        (
            {"grid.tp": [1, 2], "grid.step_time": ["measured:bench.json"]},
            "grid.step_time",
            "prices steps as measured on one GPU, so it cannot speak for tp 2",
        ),
        ({"grid.replicas": [5000]}, "grid.replicas", "at most 4096"),
    ],
)
def test_axes_the_simulator_cannot_express_are_refused_before_work(tmp_path, change, field, message):
    with pytest.raises(UserError, match=message) as err:
        execute.plan(section(**change), tmp_path)
    assert err.value.field == field


def test_unknown_gpu_is_named_before_work(tmp_path):
    with pytest.raises(UserError, match="unknown GPU 'h1000'") as err:
        execute.plan(section(**{"grid.gpu": ["h1000"]}), tmp_path)
    assert err.value.field == "grid.gpu"


def test_spec_mistakes_are_one_line_naming_the_field(tmp_path, capsys):
    bad = {"sweep": {**SMALL, "grid": {**SMALL["grid"], "max_num_seqz": [4]}}}
    path = tmp_path / "s.yaml"
    path.write_text(dump_yaml(bad))
    assert cli.main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 2
    line = capsys.readouterr().err.strip()
    assert (
        line == f"{path}: sweep.grid.max_num_seqz: unknown field 'max_num_seqz'; did you mean 'max_num_seqs'?"
    )
    assert not (tmp_path / "o").exists()
    bad["sweep"] = {**SMALL, "grid": {**SMALL["grid"], "step_time": ["rooflin"]}}
    path.write_text(dump_yaml(bad))
    assert cli.main(["sweep", str(path)]) == 2
    assert "use roofline, unit[:SECONDS], measured:FILE or calibrated:FILE" in capsys.readouterr().err


def test_arrival_rates_need_a_generated_workload():
    with pytest.raises(ValueError, match="needs a generated workload"):
        SweepSection.model_validate({**SMALL, "workload": {"trace": "x.csv"}})


# ---- the adapter ------------------------------------------------------------------------------


def test_a_point_is_the_simulator_run_on_the_same_workload(tmp_path):
    """The adapter's numbers are batching.simulate's own on the workload at the point's rate."""
    import numpy as np

    from engine import batching
    from engine import workload as wl
    from engine.batching.loaders import num_blocks_from_catalog

    sec = section()
    the_plan = execute.plan(sec, tmp_path)
    point = the_plan.points[1]  # h100, max_num_seqs 4, 50 req/s
    got = adapter.evaluate(point, the_plan.workload, the_plan.options)
    spec = sec.workload.model_copy(update={"arrivals": wl.Poisson(rate=50)})
    load = wl.generate(spec)
    blocks = num_blocks_from_catalog("llama-3-8b", "h100-80gb", 16)
    ref = batching.simulate(
        load,
        batching.PagedPolicy(
            num_blocks=blocks, max_num_seqs=4, max_num_batched_tokens=256, chunked_prefill=True
        ),
        slots=4,
        step_time=batching.UnitStepTime(0.02),
    )
    assert got["status"] == "ok" and got["num_blocks"] == blocks
    assert got["ttft_p99"] == pytest.approx(float(np.percentile(ref.latency.seconds["ttft"], 99)), rel=1e-12)
    assert got["throughput_tok_s"] == pytest.approx(ref.throughput_tokens_per_second, rel=1e-12)


def one_point(tmp_path: Path, **changes: Any) -> tuple[dict[str, Any], Any]:
    """The adapter's row for a one-point grid, and the workload that point ran on."""
    the_plan = execute.plan(section(**changes), tmp_path)
    (point,) = the_plan.points
    got = adapter.evaluate(point, the_plan.workload, the_plan.options)
    return got, adapter.workload_for(the_plan.workload, point.arrival_rate)


def assert_same_metrics(got: dict[str, Any], lat: dict[str, Any], tokens: int, makespan: float) -> None:
    import numpy as np

    assert got["status"] == "ok", got["reason"]
    for name in ("ttft", "tpot", "e2e"):
        values = lat[name][np.isfinite(lat[name])]
        assert (got[f"{name}_p50"], got[f"{name}_p99"]) == tuple(
            float(v) for v in np.percentile(values, [50, 99])
        )
    assert got["makespan_s"] == makespan
    assert got["throughput_tok_s"] == tokens / makespan


ONE = {"grid.gpu": ["h100-80gb"], "grid.max_num_seqs": [8], "grid.arrival_rate": [50]}


def test_a_tensor_parallel_point_is_the_simulator_on_one_gpus_share(tmp_path):
    """tp 2: KV blocks and the roofline for half the model on each GPU, plus the all-reduces."""
    from engine import batching
    from engine.batching.loaders import num_blocks_from_catalog

    got, load = one_point(tmp_path, **ONE, **{"grid.tp": [2], "grid.step_time": ["roofline"]})
    blocks = num_blocks_from_catalog("llama-3-8b", "h100-80gb", 16, "auto", 2)
    step = batching.roofline_from_catalog("llama-3-8b", "h100-80gb", tp=2)
    assert step.comm_seconds_per_token > 0
    policy = batching.registry.build(
        "paged",
        batching.PolicySettings(
            num_blocks=blocks, max_num_seqs=8, max_num_batched_tokens=256, chunked_prefill=True
        ),
    )
    ref = batching.simulate(load, policy, slots=8, step_time=step)
    assert got["num_blocks"] == blocks
    assert_same_metrics(got, ref.latency.seconds, int(load.output_tokens.sum()), ref.makespan_seconds)
    # each GPU holds half the weights and half the KV heads: more than twice one GPU's tokens
    assert blocks > 2 * num_blocks_from_catalog("llama-3-8b", "h100-80gb", 16, "auto", 1)


@pytest.mark.parametrize("router", ["round_robin", "random", "least_outstanding", "shared_queue"])
def test_a_point_with_replicas_is_the_cluster_simulator(tmp_path, router):
    from engine import batching
    from engine.batching.loaders import num_blocks_from_catalog
    from engine.batching.replicas import simulate_replicas

    got, load = one_point(tmp_path, **ONE, **{"grid.replicas": [2], "grid.router": [router]})
    blocks = num_blocks_from_catalog("llama-3-8b", "h100-80gb", 16)
    policy = batching.PagedPolicy(
        num_blocks=blocks, max_num_seqs=8, max_num_batched_tokens=256, chunked_prefill=True
    )
    ref = simulate_replicas(
        load,
        policy,
        slots=8,
        step_time=batching.UnitStepTime(0.02),
        replicas=2,
        router=router,
        seed=SMALL["workload"]["seed"],
    )
    assert ref.latency_seconds is not None and ref.makespan_seconds is not None
    assert_same_metrics(got, ref.latency_seconds, ref.tokens, ref.makespan_seconds)
    assert got["requests"] == 40 and got["preemptions"] == ref.preemptions
    # two replicas each run a share of the load: never slower end to end than one engine alone
    single, _ = one_point(tmp_path, **ONE)
    assert got["makespan_s"] <= single["makespan_s"] and got["e2e_p99"] <= single["e2e_p99"]


def test_a_point_with_replicas_costs_every_gpu(tmp_path):
    out = run(
        section(**ONE, **{"grid.tp": [2], "grid.replicas": [3], "grid.step_time": ["roofline"]}),
        tmp_path,
        workers=1,
    )
    (r,) = out["rows"]
    assert r["gpus"] == 6 and r["usd_per_hour"] == 6 * load_prices()["h100-80gb"].usd_per_gpu_hour
    assert r["throughput_tok_s_per_gpu"] == r["throughput_tok_s"] / 6


def bench_file(path: Path) -> Path:
    """Decode steps of an 8B model on one H100-like card: a fixed cost, weights, KV reads."""
    points = [
        {"batch": b, "context": c, "seconds": 0.0065 + 0.00002 * b + 1.6e-10 * 131072 * b * c}
        for b in (1, 8, 32, 64)
        for c in (128, 1024, 4096)
    ]
    path.write_text(json.dumps({"step_time": {"points": points}}))
    return path


def test_a_calibrated_point_is_the_roofline_fitted_to_the_file(tmp_path):
    from engine import batching
    from engine.batching.calibrated import calibrate_from_catalog
    from engine.batching.loaders import num_blocks_from_catalog

    bench = bench_file(tmp_path / "bench.json")
    got, load = one_point(tmp_path, **ONE, **{"grid.step_time": ["calibrated:bench.json"]})
    step = calibrate_from_catalog("llama-3-8b", "h100-80gb", bench)
    policy = batching.PagedPolicy(
        num_blocks=num_blocks_from_catalog("llama-3-8b", "h100-80gb", 16),
        max_num_seqs=8,
        max_num_batched_tokens=256,
        chunked_prefill=True,
    )
    ref = batching.simulate(load, policy, slots=8, step_time=step)
    assert_same_metrics(got, ref.latency.seconds, int(load.output_tokens.sum()), ref.makespan_seconds)
    # under tp 2 the fit made on one GPU carries over to each GPU's half of the model
    two = adapter.calibrated_step_time(str(bench), "h", "llama-3-8b", None, "h100-80gb", "auto", 2)
    assert (two.memory_efficiency, two.flops_efficiency, two.kernel_seconds) == (
        step.memory_efficiency,
        step.flops_efficiency,
        step.kernel_seconds,
    )
    assert two.weights_bytes == pytest.approx(step.weights_bytes / 2, rel=1e-9)
    assert two.attention_flops_per_kv_token == step.attention_flops_per_kv_token / 2
    assert (
        two.comm_seconds_per_token
        == batching.roofline_from_catalog("llama-3-8b", "h100-80gb", tp=2).comm_seconds_per_token
        > 0
    )
    (bench_bad := tmp_path / "bad.json").write_text(json.dumps({"step_time": {"points": []}}))
    with pytest.raises(UserError, match="needs a non-empty list of points"):
        execute.plan(section(**{"grid.step_time": ["calibrated:bad.json"]}), tmp_path)
    assert bench_bad.exists()


def test_a_tp_that_does_not_split_the_heads_is_an_infeasible_row(tmp_path):
    got, _ = one_point(tmp_path, **ONE, **{"grid.tp": [3], "grid.step_time": ["roofline"]})
    assert got["status"] == "infeasible" and "3 GPUs cannot split evenly" in got["reason"]


def test_a_model_that_does_not_fit_is_an_infeasible_row_not_an_error(tmp_path):
    sec = section(
        **{
            "grid.model": ["llama-3-70b"],
            "grid.gpu": ["a10g"],
            "grid.max_num_seqs": [4],
            "grid.arrival_rate": [5],
        }
    )
    out = run(sec, tmp_path, workers=1)
    (row,) = out["rows"]
    assert row["status"] == "infeasible" and "leaves no memory for the KV cache" in row["reason"]
    assert row["meets_targets"] is False
    assert out["statement"].startswith(
        "No configuration meets the targets (ttft_p99 ≤ 0.5 s): none of the 1 points"
    )


# ---- execution: pool, resume, Ray -------------------------------------------------------------


def test_process_pool_and_in_process_give_the_same_table(tmp_path):
    one = run(section(), tmp_path, workers=1)
    two = run(section(), tmp_path, workers=2)
    assert to_csv(one["rows"]) == to_csv(two["rows"])
    assert [r["gpu"] for r in one["rows"]] == [p.gpu for p in expand(section().grid)]


def test_an_interrupted_sweep_resumes_without_recomputing(tmp_path, monkeypatch):
    sec, store = section(), tmp_path / "points.jsonl"
    reference = run(sec, tmp_path, workers=1)
    calls: list[Any] = []
    real = adapter.evaluate

    def interrupted(point, workload, options):
        if len(calls) == 3:
            raise KeyboardInterrupt
        calls.append(point)
        return real(point, workload, options)

    monkeypatch.setattr(adapter, "evaluate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run(sec, tmp_path, workers=1, store_path=store)
    assert len(store.read_text().splitlines()) == 3
    with store.open("a") as f:  # the kill also cut a fourth line in half
        f.write('{"key": "abc", "metr')
    calls.clear()
    monkeypatch.setattr(adapter, "evaluate", lambda p, w, o: calls.append(p) or real(p, w, o))
    resumed = run(sec, tmp_path, workers=1, store_path=store)
    assert len(calls) == 5  # the 8 points less the 3 already stored
    assert to_csv(resumed["rows"]) == to_csv(reference["rows"])
    calls.clear()
    run(sec, tmp_path, workers=1, store_path=store)
    assert calls == []  # everything stored: nothing recomputed
    assert len(ResultStore(store).results) == 8


def test_one_replica_is_simulated_once_whatever_the_router(tmp_path, monkeypatch):
    calls: list[Any] = []
    real = adapter.evaluate
    monkeypatch.setattr(adapter, "evaluate", lambda p, w, o: calls.append(p) or real(p, w, o))
    out = run(
        section(**ONE, **{"grid.replicas": [1, 2], "grid.router": ["round_robin", "random"]}),
        tmp_path,
        workers=1,
    )
    assert [(r["replicas"], r["router"]) for r in out["rows"]] == [
        (1, "round_robin"),
        (1, "random"),
        (2, "round_robin"),
        (2, "random"),
    ]
    assert sorted((p.replicas, p.router if p.replicas > 1 else "") for p in calls) == [
        (1, ""),
        (2, "random"),
        (2, "round_robin"),
    ]
    metrics = [{k: v for k, v in r.items() if k != "router"} for r in out["rows"]]
    assert metrics[0] == metrics[1] and metrics[2] != metrics[3]


def test_changed_options_do_not_reuse_stored_results(tmp_path, monkeypatch):
    store = tmp_path / "points.jsonl"
    run(section(), tmp_path, workers=1, store_path=store)
    calls: list[Any] = []
    real = adapter.evaluate
    monkeypatch.setattr(adapter, "evaluate", lambda p, w, o: calls.append(p) or real(p, w, o))
    run(section(block_size=32), tmp_path, workers=1, store_path=store)
    assert len(calls) == 8


def test_an_edited_model_config_does_not_reuse_stored_results(tmp_path, monkeypatch):
    """A model given as a config.json path is part of every point's key by its content."""
    from engine.catalog import catalog_model_entry

    config = tmp_path / "my-model" / "config.json"
    config.parent.mkdir()
    doc = dict(catalog_model_entry("llama-3-8b")["config"])
    config.write_text(json.dumps(doc))
    store = tmp_path / "points.jsonl"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # read from the spec's folder, not where it runs
    sec = section(**{"grid.model": ["my-model"]})
    before = run(sec, tmp_path, workers=1, store_path=store)
    calls: list[Any] = []
    real = adapter.evaluate
    monkeypatch.setattr(adapter, "evaluate", lambda p, w, o: calls.append(p) or real(p, w, o))
    run(sec, tmp_path, workers=1, store_path=store)
    assert calls == []  # unchanged: every point read back
    config.write_text(json.dumps({**doc, "num_hidden_layers": 2 * doc["num_hidden_layers"]}))
    after = run(sec, tmp_path, workers=1, store_path=store)
    assert len(calls) == 8  # twice the layers: twice the KV per token, every point again
    assert [r["num_blocks"] for r in after["rows"]] != [r["num_blocks"] for r in before["rows"]]


def test_a_model_config_outside_the_spec_folder_is_refused_unread(tmp_path):
    """A grid's config.json is a file the spec names, so it sits in the spec's folder like a
    trace: an absolute path, a folder that links out, or a config.json inside that links out is
    one error naming sweep.grid.model, and the secret it would have read is never quoted."""
    secret = tmp_path.parent / f"{tmp_path.name}-secret"
    secret.mkdir()
    (secret / "config.json").write_text('{"torch_dtype": "TOKEN=abc123"}')
    (tmp_path / "evil").symlink_to(secret)
    (tmp_path / "inside").mkdir()
    (tmp_path / "inside" / "config.json").symlink_to(secret / "config.json")
    for model, says in (
        (str(secret / "config.json"), "must be a path inside the spec's folder"),
        ("../" + secret.name, "must be a path inside the spec's folder"),
        ("evil", "leads out of the spec's folder"),
        ("inside", "leads out of the spec's folder"),
        ("inside/config.json", "leads out of the spec's folder"),
    ):
        with pytest.raises(UserError) as err:
            run(section(**{"grid.model": ["llama-3-8b", model]}), tmp_path, workers=1)
        assert err.value.field == "sweep.grid.model" and says in err.value.message, model
        assert "abc123" not in err.value.line()


def test_a_mistyped_catalog_model_is_told_the_nearest_names(tmp_path):
    """'llama-3-8' is neither a catalog model nor a path: it is a catalog name mistyped, told
    the nearest ones, never looked for as a file (here or where the command runs)."""
    with pytest.raises(UserError) as err:
        run(section(**{"grid.model": ["llama-3-8"]}), tmp_path, workers=1)
    assert (
        err.value.field == "sweep" and "unknown model 'llama-3-8'; nearest: llama-3-8b" in err.value.message
    )


def test_ray_tasks_give_the_same_table_in_the_same_order(tmp_path):
    ray = pytest.importorskip(
        "ray", reason="the optional 'ray' extra is not installed: pip install 'ray==2.60.0'"
    )
    local = run(section(), tmp_path, workers=1)
    remote = run(section(), tmp_path, ray_address="local")  # starts a local instance, stops it after
    assert not ray.is_initialized()
    assert to_csv(remote["rows"]) == to_csv(local["rows"])


def test_ray_address_without_ray_is_a_clear_error(tmp_path, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray":
            raise ImportError("no ray")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(UserError, match="needs the optional 'ray' extra"):
        run(section(), tmp_path, ray_address="ray://head:10001")
    with pytest.raises(UserError, match="needs the optional 'ray' extra"):  # the spec's own ray: key
        run(section(ray={"address": "auto"}), tmp_path)


def test_a_build_runs_a_sweep_on_this_machine_whatever_ray_address_its_spec_names(tmp_path, monkeypatch):
    """A day someone else wrote may name a Ray address (a host of theirs, or 'local', which
    starts an instance and writes a token under the home folder): a build never goes there; it
    runs every point on this machine's cores, as without the key. `engine sweep` follows it."""
    from engine.sections import Inputs
    from engine.sweep import execute

    def no_ray(*args, **kwargs):
        raise AssertionError("a build reached for Ray")

    monkeypatch.setattr(execute, "_run_ray", no_ray)
    monkeypatch.setattr(experiment.POINTS, "store", lambda: ResultStore(None, valid=adapter.is_metrics))
    where = SpecLocation(spec_path=tmp_path / "spec.yaml")
    alone = to_csv(run(section(), tmp_path, workers=1)["rows"])
    for address in ("local", "ray://somewhere:10001"):
        built = experiment._run_for_build(section(ray={"address": address}), where, Inputs())
        assert to_csv(built["rows"]) == alone
    with pytest.raises(AssertionError, match="reached for Ray"):
        run(section(ray={"address": "local"}), tmp_path)


# ---- pricing and ranking ----------------------------------------------------------------------


def test_every_catalog_price_has_a_source_and_a_date_and_names_a_catalog_gpu():
    from engine.catalog import gpu_names

    prices = load_prices()
    assert prices and set(prices) <= set(gpu_names())
    for price in prices.values():
        assert price.page.startswith("https://") and price.provider
        assert len(price.as_of) == len("2026-09-20") and price.as_of[4] == "-"
    doc = load_yaml(PRICES_FILE.read_text())
    assert "l40s" not in doc["prices"]  # unknown prices are absent, not guessed


def test_price_file_mistakes_name_the_field(tmp_path):
    path = tmp_path / "prices.yaml"
    path.write_text("prices:\n  h100-80gb: {usd_per_gpu_hour: -1, provider: X, page: p, as_of: d}\n")
    with pytest.raises(UserError, match=r"prices.h100-80gb.usd_per_gpu_hour: must be a number"):
        load_prices(path)
    path.write_text("prices:\n  h100-80gb: {usd_per_gpu_hour: 2, provider: X, page: p}\n")
    with pytest.raises(UserError, match=r"prices.h100-80gb.as_of: required field is missing"):
        load_prices(path)


def row(i: int, **kw: Any) -> dict[str, Any]:
    base = {
        "gpu": "h100-80gb",
        "model": "m",
        "tp": 1,
        "replicas": 1,
        "router": "round_robin",
        "max_num_seqs": 8,
        "max_num_batched_tokens": 512,
        "kv_dtype": "auto",
        "step_time": "roofline",
        "arrival_rate": 1.0,
        "status": "ok",
        "throughput_tok_s": 1000.0,
        "ttft_p99": 0.1,
        "e2e_p99": 1.0,
    }
    return {**base, **kw, "i": i}


def test_cost_columns_by_hand():
    prices = load_prices()
    (r,) = analysis.with_costs([row(0, throughput_tok_s=2000.0)], prices, {"ttft_p99": 0.2})
    # one H100 at its list price, 2,000 tokens/s: 7.2 M tokens an hour
    assert r["usd_per_hour"] == prices["h100-80gb"].usd_per_gpu_hour
    assert r["usd_per_million_tokens"] == pytest.approx(prices["h100-80gb"].usd_per_gpu_hour / 7.2)
    assert r["meets_targets"] is True
    (slow,) = analysis.with_costs([row(0, ttft_p99=0.3)], prices, {"ttft_p99": 0.2})
    assert slow["meets_targets"] is False


def test_cheapest_ranks_by_cost_per_token_then_hour_then_grid_order():
    rows = [
        {**row(0), "meets_targets": True, "usd_per_million_tokens": 0.5, "usd_per_hour": 4.0},
        {**row(1), "meets_targets": True, "usd_per_million_tokens": 0.4, "usd_per_hour": 4.0},
        {**row(2), "meets_targets": False, "usd_per_million_tokens": 0.1, "usd_per_hour": 1.0},
        {**row(3), "meets_targets": True, "usd_per_million_tokens": 0.4, "usd_per_hour": 2.0},
        {**row(4), "meets_targets": True, "usd_per_million_tokens": None, "usd_per_hour": None},
        {**row(5), "meets_targets": True, "usd_per_million_tokens": 0.4, "usd_per_hour": 2.0},
    ]
    assert [r["i"] for r in analysis.cheapest(rows, 10)] == [3, 5, 1, 0]
    assert [r["i"] for r in analysis.cheapest(rows, 2)] == [3, 5]


def test_pareto_front_matches_the_naive_definition():
    rng = random.Random(7)
    for _ in range(30):
        rows = [
            row(
                i,
                e2e_p99=rng.choice([0.5, 1.0, 1.5, 2.0, 3.0]),
                throughput_tok_s_per_gpu=float(rng.randint(1, 9)),
                status=rng.choice(["ok", "ok", "infeasible"]),
            )
            for i in range(rng.randint(0, 25))
        ]
        ok = [i for i, r in enumerate(rows) if r["status"] == "ok"]

        def dominated(a: dict[str, Any], others: list[dict[str, Any]]) -> bool:
            return any(
                (
                    b["e2e_p99"] <= a["e2e_p99"]
                    and b["throughput_tok_s_per_gpu"] >= a["throughput_tok_s_per_gpu"]
                )
                and (
                    b["e2e_p99"] < a["e2e_p99"]
                    or b["throughput_tok_s_per_gpu"] > a["throughput_tok_s_per_gpu"]
                )
                for b in others
            )

        front = analysis.pareto_front(rows, "e2e_p99")
        alive = [rows[j] for j in ok]
        naive = {
            (rows[i]["e2e_p99"], rows[i]["throughput_tok_s_per_gpu"])
            for i in ok
            if not dominated(rows[i], alive)
        }
        assert {(rows[i]["e2e_p99"], rows[i]["throughput_tok_s_per_gpu"]) for i in front} == naive
        assert len(front) == len(naive)  # one point per non-dominated spot, the first in grid order


# ---- a target nobody meets, charts, the command -----------------------------------------------


def test_a_target_nobody_meets_is_a_statement_on_the_page_and_the_charts(tmp_path):
    from engine.commands.sweep import report, write_outputs

    out = run(section(targets={"ttft_p99": 0.000001}), tmp_path, workers=1)
    assert out["meeting"] == 0 and out["cheapest"] == []
    assert out["statement"].startswith(
        "No configuration meets the targets (ttft_p99 ≤ 1e-06 s) among 8 points; "
        "the closest, h100-80gb x1, llama-3-8b"
    )
    assert out["statement"] in report(out)
    written = write_outputs(out, tmp_path / "o", title="t")
    assert {p.name for p in written} == {"sweep.csv", "sweep.json", "pareto.png", "cheapest_table.png"}
    assert "none meets them" in (tmp_path / "o" / "cheapest_table.alt.txt").read_text()
    assert "None meets the latency targets" in (tmp_path / "o" / "pareto.alt.txt").read_text()


def test_fresh_sets_results_aside_and_never_a_folder_or_earlier_ones(tmp_path):
    """--fresh with --results naming a folder is one line and leaves it as it was; --fresh sets
    the last results aside without replacing the ones set aside before."""
    path = tmp_path / "s.yaml"
    path.write_text(dump_yaml({"sweep": SMALL}))
    out = tmp_path / "o"
    run = ["sweep", str(path), "--out", str(out), "--workers", "1", "--no-progress", "--no-charts"]
    folder = tmp_path / "mydays"
    (folder / "keep.md").parent.mkdir()
    (folder / "keep.md").write_text("x")
    assert cli.main([*run, "--results", str(folder), "--fresh"]) == 2
    assert (folder / "keep.md").read_text() == "x" and not (tmp_path / "mydays.old").exists()
    assert cli.main(run) == 0
    points = out / "points.jsonl"
    first = points.read_bytes()
    assert cli.main([*run, "--fresh"]) == 0
    assert (out / "points.jsonl.old").read_bytes() == first
    assert cli.main([*run, "--fresh"]) == 0
    assert (out / "points.jsonl.old").read_bytes() == first  # kept; the next one beside it
    assert (out / "points.jsonl.old-2").exists()


def test_the_command_prints_the_cheapest_and_writes_the_table(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(dump_yaml({"sweep": SMALL}))
    out = tmp_path / "o"
    assert (
        cli.main(["sweep", str(path), "--out", str(out), "--workers", "1", "--no-progress", "--no-charts"])
        == 0
    )
    text = capsys.readouterr().out
    assert "cheapest configurations that meet the targets" in text
    lines = (out / "sweep.csv").read_text().splitlines()
    assert len(lines) == 9 and lines[0].startswith("gpu,model,tp,replicas,router,max_num_seqs")
    summary = json.loads((out / "sweep.json").read_text())
    best = summary["cheapest"][0]
    assert best["meets_targets"] and best["gpu"] in text.split("\n")[4]
    assert len((out / "points.jsonl").read_text().splitlines()) == 8


def test_measured_step_times_are_read_once_and_a_bad_file_stops_the_sweep_first(tmp_path):
    points = [
        {"batch": b, "context": c, "seconds": 0.01 + 0.0001 * b + 1e-7 * b * c}
        for b in (1, 8, 32)
        for c in (128, 1024)
    ]
    (tmp_path / "bench.json").write_text(json.dumps({"step_time": {"points": points}}))
    out = run(section(**{"grid.step_time": ["measured:bench.json"]}), tmp_path, workers=1)
    assert all(r["status"] == "ok" for r in out["rows"])
    (tmp_path / "bench.json").write_text(json.dumps({"step_time": {"points": []}}))
    with pytest.raises(UserError, match="needs a non-empty list of points"):
        execute.plan(section(**{"grid.step_time": ["measured:bench.json"]}), tmp_path)
