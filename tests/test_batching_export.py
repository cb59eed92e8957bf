"""The per-request CSV and the Chrome/Perfetto trace, read back and checked against the run."""

from __future__ import annotations

import csv
import json

import numpy as np
import pytest

from engine.batching import PagedPolicy, UnitStepTime, export, simulate
from engine.batching.paged import UNGATED_SYNC_RULES
from engine.batching.prefill_first import PrefillFirstPolicy
from engine.cli import main
from engine.errors import UserError
from engine.workload import Workload


def tight_load() -> Workload:
    rng = np.random.default_rng(11)
    n = 80
    return Workload.of(rng.integers(5, 40, n), rng.integers(1, 60, n), np.sort(rng.uniform(0, 6, n)))


@pytest.mark.parametrize(
    "policy",
    [
        PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=60, block_size=4),
        PrefillFirstPolicy(num_blocks=60, block_size=4),
    ],
)
def test_preemptions_per_request_add_up_and_pauses_do_not_count(policy):
    r = simulate(tight_load(), policy, slots=8, step_time=UnitStepTime(0.02))
    per = export.preemptions_per_request(r.schedule, 80)
    assert r.preemptions > 0 and int(per.sum()) == r.preemptions


def test_requests_csv_reads_back(tmp_path):
    w, step = tight_load(), UnitStepTime(0.02)
    r = simulate(w, PagedPolicy(**UNGATED_SYNC_RULES, num_blocks=60, block_size=4), slots=8, step_time=step)
    path = tmp_path / "requests.csv"
    rows = export.write_requests_csv(
        path, [export.Run("paged", None, r, np.arange(80), w.arrival_time, step)]
    )
    table = list(csv.DictReader(path.open()))
    assert rows == len(table) == 80
    first = np.array([float(t["first_token_s"]) for t in table])
    finish = np.array([float(t["finish_s"]) for t in table])
    np.testing.assert_allclose(first - w.arrival_time, r.latency.seconds["ttft"], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(finish - w.arrival_time, r.latency.seconds["e2e"], rtol=1e-8, atol=1e-9)
    assert sum(int(t["preemptions"]) for t in table) == r.preemptions
    assert not list(tmp_path.glob("*.part"))


def test_trace_has_a_bar_per_stay_part_and_a_track_per_slot(tmp_path):
    w, step = tight_load(), UnitStepTime(0.02)
    r = simulate(w, PrefillFirstPolicy(num_blocks=60, block_size=4), slots=8, step_time=step)
    path = tmp_path / "trace.json"
    export.write_trace(path, [export.Run("prefill_first", None, r, np.arange(80), w.arrival_time, step)])
    events = json.loads(path.read_text())["traceEvents"]
    s = r.schedule
    bars = [e for e in events if e["ph"] == "X"]
    assert len(bars) == int(np.sum(s.decode_start > s.start) + np.sum(s.end > s.decode_start))
    assert {e["args"]["name"] for e in events if e.get("name") == "thread_name"} == {
        f"slot {k}" for k in np.unique(s.slot)
    }
    decode_us = sum(e["dur"] for e in bars if e["cat"] == "decode")
    assert decode_us == pytest.approx(0.02e6 * int((s.end - s.decode_start).sum()), rel=1e-9)


def test_caps_refuse_before_writing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(export, "MAX_TRACE_STAYS", 5)
    path = tmp_path / "trace.json"
    code = main(
        [
            "simulate",
            "--requests",
            "20",
            "--output-tokens",
            "4",
            "--slots",
            "2",
            "--policy",
            "continuous",
            "--trace",
            str(path),
        ]
    )
    assert code == 2 and "--trace" in capsys.readouterr().err and not path.exists()
    monkeypatch.setattr(export, "MAX_CSV_ROWS", 5)
    with pytest.raises(UserError) as err:
        export.write_requests_csv(tmp_path / "r.csv", [export.Run("x", None, None, np.arange(9), None, None)])
    assert err.value.field == "--requests-csv"
