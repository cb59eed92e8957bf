"""spec → results → files: the one path every day takes (modelled on a static-site build).

1. load and validate the spec;  2. run each experiment its sections ask for;
3. render the drafts;  4. draw the charts;  5. check every draft against the platforms' rules;
6. write results.json and the review page;  7. move the finished folder into out/.

Steps 1–6 happen in a staging folder; out/ changes only at step 7, so a failing build (bad
input, a post over the limit) leaves out/ exactly as it was, and outdir keeps hand edits.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import outdir, posts
from engine.errors import UserError
from engine.experiments import Context
from engine.spec import DaySpec, load_spec

REPO_ROOT = Path(__file__).resolve().parent.parent
# The LinkedIn feed gives a portrait image the most room on a phone (4:5, 1080 × 1350).
LINKEDIN_IMAGE_SIZE = "linkedin_portrait"
TEMPLATES = REPO_ROOT / "templates"


class ChecksFailed(Exception):
    """The drafts broke a platform rule; nothing was written."""

    def __init__(self, violations: list[str]):
        self.violations = violations
        super().__init__("; ".join(violations))


@dataclass
class BuildReport:
    day: int
    folder: Path
    written: list[Path] = field(default_factory=list)
    kept_edits: list[tuple[Path, Path]] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def day_folder_name(day: int) -> str:
    return f"day{day:02d}"


def compute(spec: DaySpec, ctx: Context) -> dict[str, Any]:
    """Every number the drafts and charts use, with the inputs that produced it."""
    from engine.experiments import links, measured

    results: dict[str, Any] = {
        "day": spec.day,
        "title": spec.title,
        "series": spec.series.model_dump(),
        "repository": spec.repository,
        "hashtags": list(spec.hashtags),
        "inputs": spec.model_dump(mode="json"),
    }
    if spec.kv_cache is not None:
        from engine.experiments import kv_cache

        results["kv_cache"] = kv_cache.run(spec.kv_cache, ctx)
    measurement = measured.resolve(spec, ctx)
    if spec.batching is not None:
        from engine.experiments import batching

        results["batching"] = batching.run(spec.batching, ctx, measurement)
    if spec.queueing is not None:
        from engine.experiments import queueing

        results["queueing"] = queueing.run(spec.queueing, ctx)
    results["measured"] = measured.run(spec, ctx, measurement)
    results["links_back"] = links.run(spec, ctx)
    return results


def render_drafts(results: dict[str, Any], templates_root: Path = TEMPLATES) -> dict[str, str]:
    """Each templates/dayNN/*.j2 becomes a draft named without '.j2'; threads get numbered."""
    env = posts.environment(templates_root)
    folder = day_folder_name(results["day"])
    context = template_context(results)
    templates = sorted((templates_root / folder).glob("*.j2"))
    if not templates:
        raise UserError(
            "no templates for this day: create linkedin.md.j2 and x-thread.md.j2 (see README)",
            file=f"templates/{folder}/",
        )
    posts.check_no_typed_numbers(templates_root, [f"{folder}/{t.name}" for t in templates])
    drafts: dict[str, str] = {}
    for template in templates:
        name = template.name.removesuffix(".j2")
        text = posts.render(env, f"{folder}/{template.name}", context)
        if name.startswith("x-thread"):
            text = posts.number_thread(text)
        drafts[name] = text
    return drafts


def template_context(results: dict[str, Any]) -> dict[str, Any]:
    """Short names for the templates; they see results and spec metadata, nothing else."""
    return {
        "day": results["day"],
        "title": results["title"],
        "series": results["series"],
        "repository": results["repository"],
        "hashtags": results["hashtags"],
        "links_back": results.get("links_back", []),
        "measured": results.get("measured"),
        "kv": results.get("kv_cache"),
        "bt": results.get("batching"),
        "qu": results.get("queueing"),
        "charts": results["inputs"]["charts"],  # names the spec asked for, to attach images
    }


def check_drafts(drafts: dict[str, str], charts: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the platform rules on the drafts; raise ChecksFailed naming each offending post."""
    from engine import platforms

    checks: dict[str, Any] = {"linkedin": [], "x": [], "violations": []}
    violations: list[Any] = []
    for name, text in drafts.items():
        if name.startswith("linkedin"):
            counts, found = platforms.check_linkedin(text, draft=name)
            checks["linkedin"] = [vars(c) for c in counts]
            violations += found
        elif name.startswith("x-thread"):
            per_post, found = platforms.check_x_thread(platforms.split_thread(text), draft=name,
                                                       available={c["file"] for c in charts})
            checks["x"] = [[vars(c) for c in post] for post in per_post]
            violations += found
    for chart in charts:
        for platform in ("x", "linkedin"):
            violations += platforms.check_alt_text(chart["alt_text"], platform=platform)
    checks["violations"] = [str(v) for v in violations]
    if violations:
        raise ChecksFailed(checks["violations"])
    return checks


def write_json(path: Path, data: Any) -> None:
    # allow_nan=False: `Infinity` is not JSON, and a non-finite figure must never reach a post.
    path.write_text(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n")


def build(
    spec_path: Path, out_root: Path, *, force: bool = False, templates_root: Path = TEMPLATES
) -> BuildReport:
    spec_path = Path(spec_path)
    spec = load_spec(spec_path)
    ctx = Context(spec_path=spec_path)
    results = compute(spec, ctx)
    drafts = render_drafts(results, templates_root)

    target = out_root / day_folder_name(spec.day)
    staging = outdir.Staging.create(target)
    try:
        for name, text in drafts.items():
            (staging.path / name).write_text(text, encoding="utf-8")
        try:
            results["charts"] = draw_charts(spec, results, staging.path)
        except UserError as err:  # a chart the results cannot draw: the spec asked for it
            if err.file:
                raise
            raise UserError(err.message, file=spec_path, field=err.field) from None
        results["checks"] = check_drafts(drafts, results["charts"])
        write_json(staging.path / "results.json", results)
        from engine import review

        (staging.path / "index.html").write_text(
            review.render_day_page(staging.path, results, drafts), encoding="utf-8"
        )
        committed = outdir.commit(staging, force=force)
    except BaseException:
        staging.discard()
        raise
    # Re-render the page from disk: where a hand edit was kept, it shows the edited draft.
    review.write_day_page(target)
    review.write_index(out_root)
    return BuildReport(
        day=spec.day,
        folder=target,
        written=committed.written,
        kept_edits=committed.kept_edits,
        summary=headline(results),
        warnings=check_kept_edits(target, committed.kept_edits),
    )


def check_kept_edits(folder: Path, kept: list[tuple[Path, Path]]) -> list[str]:
    """The platform rules on drafts a person edited: the build kept them, so it checks them too.

    The fresh render passed before anything was written; an edit may not, and the person should
    hear it now rather than when the post is refused.
    """
    if not kept:
        return []
    from engine import platforms

    names = {path.name for path, _ in kept}
    report = platforms.check_day_dir(folder)
    return [str(v) for v in report.violations if v.draft in names]


def draw_charts(spec: DaySpec, results: dict[str, Any], folder: Path) -> list[dict[str, Any]]:
    if not spec.charts:
        return []
    from engine import charts

    drawn = []
    jobs = [(name, None) for name in spec.charts]
    if spec.linkedin_image is not None:
        jobs.append((spec.linkedin_image, LINKEDIN_IMAGE_SIZE))
    for name, size in jobs:
        chart = charts.draw(name, results, folder, size=size)
        drawn.append(
            {
                "name": chart.name,
                "file": chart.path.name,
                "alt_text": chart.alt_text,
                "width": chart.width,
                "height": chart.height,
                "platform": chart.platform,
            }
        )
    return drawn


def headline(results: dict[str, Any]) -> list[str]:
    """A few lines for the terminal: the numbers the post leans on."""
    lines = []
    kv = results.get("kv_cache")
    if kv:
        fits = ", ".join(f"{r['context']:,} → {r['max_requests']:,}" for r in kv["highlight_rows"])
        lines.append(f"kv cache ({kv['source']}): requests that fit: {fits}")
    bt = results.get("batching")
    if bt:
        parts = [
            f"{name} {p['steps']:,} steps {p['utilisation'] * 100:.1f}%"
            for name, p in bt["policies"].items()
        ]
        multiple = f", {bt['multiple']:.2f}x" if "multiple" in bt else ""
        lines.append(f"batching ({bt['source']}): " + ", ".join(parts) + multiple)
    me = results.get("measured")
    if me:
        lines.append(f"measured: {me['source']} ({me['file']})")
    qu = results.get("queueing")
    if qu and "lines" in qu:
        lines.append(f"queueing ({qu['source']}): separate lines wait {qu['lines']['wait_ratio']:.1f}x")
    return lines
