"""The whole Day 37 build: the lab's numbers come out of the engine and onto the drafts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import platforms
from engine.cli import main
from engine.pipeline import build

from helpers import DAYS, Lab, copy_built, syntax_tree


@pytest.fixture(scope="module")
def built(built_out: Path) -> Path:
    return built_out / "day37"


@pytest.fixture(scope="module")
def results(built: Path) -> dict:
    return json.loads((built / "results.json").read_text())


def test_memory_table_is_the_labs(results):
    rows = {r["context"]: r["max_requests"] for r in results["kv_cache"]["main"]["plan"]["contexts"]}
    # Hand-worked: 2 × 32 layers × 32 heads × 128 × 2 B = 512 KiB per token; 64 GiB of budget.
    assert rows == Lab.fits
    assert results["kv_cache"]["main"]["plan"]["bytes_per_token"] == 524_288
    assert results["kv_cache"]["halves_when_context_doubles"] is True


def test_batching_is_the_labs(results):
    bt = results["batching"]
    static, cont = bt["policies"]["static"], bt["policies"]["continuous"]
    assert (static["steps"], cont["steps"]) == (Lab.static_steps, Lab.continuous_steps)
    assert f"{static['utilisation']:.1%}" == Lab.static_busy
    assert f"{cont['utilisation']:.1%}" == Lab.continuous_busy
    assert f"{bt['multiple']:.1f}x" == Lab.multiple
    assert bt["ideal_steps"] == Lab.ideal_steps
    assert static["group_maxima"] == [661, 580, 480, 39, 473, 471, 527, 557, 472, 486, 546, 40, 465]


def test_drafts_say_the_labs_numbers(built):
    linkedin = (built / "linkedin.md").read_text()
    thread = (built / "x-thread.md").read_text()
    for text in (linkedin, thread):
        for figure in (
            "2,048-token chats: 64",
            "8,192-token chats: 16",
            Lab.static_busy,
            Lab.continuous_busy,
            Lab.multiple,
        ):
            assert figure in text, figure
    assert f"{Lab.static_steps:,} steps" in linkedin and f"{Lab.continuous_steps:,} steps" in linkedin
    assert "simulated" in linkedin and "calculated" in linkedin


def test_thread_is_numbered_and_within_x_limits(built):
    posts = platforms.split_thread((built / "x-thread.md").read_text())
    assert len(posts) >= 5
    for k, post in enumerate(posts, start=1):
        assert post.startswith(f"{k}/{len(posts)} ")
        # Image lines are attachment markers, deleted when pasting; the rest is what X counts.
        text = "\n".join(line for line in post.splitlines() if not line.startswith("!["))
        assert 0 < platforms.x_weighted_length(text.strip()) <= 280


def test_linkedin_fits_and_hook_lands_before_the_fold(built):
    text = (built / "linkedin.md").read_text()
    assert platforms.utf16_length(text) <= 3000
    hook = text.split("\n\n", 1)[0]
    assert len(hook) <= 210
    assert text.rstrip().splitlines()[-1].startswith("#")


def test_scoreboard_and_alt_text(built):
    assert (built / "scoreboard.png").stat().st_size > 10_000
    alt = (built / "scoreboard.alt.txt").read_text()
    assert "72.3%" in alt or "72%" in alt


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under a day's folder by its relative path (the carousel's pages sit in a folder)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_same_spec_same_bytes_whatever_path_the_spec_was_given_by(built, tmp_path, monkeypatch):
    """A second build, given the spec by a relative path, is byte for byte the session's
    (given it by an absolute one), every file, the carousel's page previews too."""
    monkeypatch.chdir(DAYS.parent)
    build(Path("days/day37.yaml"), tmp_path)
    first, again = _files(built), _files(tmp_path / "day37")
    assert sorted(first) == sorted(again)
    assert "carousel/page-01.png" in first
    for name in first:
        assert first[name] == again[name], name


def test_only_the_bench_imports_torch():
    """Every import statement under engine/, function bodies included: torch, and the torch
    side of engine.gpubench, are named only by that package and the bench command (shapes is
    torch-free: the bench's argument checks read it)."""
    import ast

    engine = DAYS.parent / "engine"
    allowed = {engine / "commands" / "bench.py"}
    offenders = []
    for path in sorted(engine.rglob("*.py")):
        if engine / "gpubench" in path.parents or path in allowed:
            continue
        source = path.read_text(encoding="utf-8")
        if "torch" not in source and "gpubench" not in source:
            continue  # no import statement can name either: not worth parsing
        for node in ast.walk(syntax_tree(path)):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                torch_side = name.startswith("engine.gpubench.") and not name.startswith(
                    "engine.gpubench.shapes"
                )
                if name == "torch" or name.startswith("torch.") or torch_side:
                    offenders.append(f"{path.relative_to(engine.parent)}:{node.lineno} {name}")
    assert offenders == []


def test_hand_edit_survives_a_rebuild(built_out, tmp_path, capsys):
    spec = str(DAYS / "day37.yaml")
    tmp_path = copy_built(built_out, tmp_path / "out")
    draft = tmp_path / "day37" / "linkedin.md"
    rendered = draft.read_text()
    draft.write_text(rendered.replace("I finally read", "This week I read"))
    capsys.readouterr()
    assert main(["build", spec, "--out", str(tmp_path)]) == 0
    assert "This week I read" in draft.read_text()
    # Same numbers: nothing to merge into the edit, so no second copy of the render beside it.
    assert not (tmp_path / "day37" / "linkedin.new.md").exists()
    assert "kept your edit of linkedin.md" in capsys.readouterr().out
    assert main(["build", spec, "--out", str(tmp_path), "--force"]) == 0
    assert draft.read_text() == rendered


def test_a_post_over_the_limit_fails_the_build_and_leaves_out_alone(built_out, tmp_path, capsys):
    import shutil

    templates = tmp_path / "templates"
    shutil.copytree(DAYS.parent / "templates", templates)
    thread = templates / "day37" / "x-thread.md.j2"
    # A long post of sentences would now be cut into posts that fit (test_reflow.py); one word
    # over the limit cannot be, and must stop the build.
    thread.write_text(thread.read_text() + "---\n" + "rambling" * 40 + "\n")
    out = copy_built(built_out, tmp_path / "out")
    before = _files(out / "day37")
    from engine.pipeline import ChecksFailed

    with pytest.raises(ChecksFailed) as failed:
        build(DAYS / "day37.yaml", out, templates_root=templates)
    assert any("x-thread.md post 8" in v and "over" in v for v in failed.value.violations), failed.value
    assert _files(out / "day37") == before
    assert sorted(p.name for p in out.iterdir() if p.name.startswith(".")) == []


def test_an_edit_that_breaks_a_rule_is_kept_but_warned_about(built_out, tmp_path, capsys):
    spec = str(DAYS / "day37.yaml")
    tmp_path = copy_built(built_out, tmp_path / "out")
    thread = tmp_path / "day37" / "x-thread.md"
    thread.write_text(thread.read_text().replace("Same requests.", "Same requests. " + "Really. " * 20, 1))
    capsys.readouterr()
    assert main(["build", spec, "--out", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert "warning: your edited x-thread.md post 4" in err and "280" in err
    assert "Really." in thread.read_text()


def test_the_linkedin_image_is_drawn_at_portrait_size(built, results):
    import struct

    png = (built / "scoreboard-linkedin_portrait.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", png[16:24]) == (1080, 1350)  # IHDR: width, height
    entry = next(c for c in results["charts"] if c["file"] == "scoreboard-linkedin_portrait.png")
    assert entry["platform"] == "linkedin" and entry["alt_text"]
