"""spec → results → files: the one path every day takes (modelled on a static-site build).

1. load and validate the spec;  2. run each experiment its sections ask for;
3. render the drafts;  4. draw the charts;  5. check every draft against the platforms' rules;
6. write results.json and the review page;  7. move the finished folder into out/.

Steps 1–6 happen in a staging folder; out/ changes only at step 7, so a failing build (bad
input, a post over the limit) leaves out/ exactly as it was, and outdir keeps hand edits.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine import audit, charts, given, outdir, quotable
from engine import inputs as inputs_of
from engine.charts.declared import resolve
from engine.errors import UserError
from engine.limits import MAX_DRAFT_BYTES, read_text_limited
from engine.outdir import atomic
from engine.outdir.manifest import AUDIT, read_base
from engine.platforms import check_alt_text, posting, urls
from engine.platforms import registry as platforms
from engine.platforms.day_dir import check_day_dir
from engine.platforms.rules import ChecksFailed
from engine.render import formats, posts, review
from engine.render.context import day_folder_name, template_context
from engine.sections import Inputs, SpecLocation, blame, sections
from engine.spec import DaySpec, load_spec

REPO_ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = REPO_ROOT / "templates"


@dataclass
class BuildReport:
    day: int
    folder: Path
    written: list[Path] = field(default_factory=list)
    kept_edits: list[tuple[Path, Path]] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    commit: outdir.CommitReport | None = None  # merges, conflicts, files set aside, what changed


def compute(spec: DaySpec, location: SpecLocation) -> dict[str, Any]:
    """Every number the drafts and charts use, with the inputs that produced it."""
    results: dict[str, Any] = {
        "day": spec.day,
        "title": spec.title,
        "series": spec.series.model_dump(),
        "repository": spec.repository,
        "hashtags": list(spec.hashtags),
        "inputs": spec.model_dump(mode="json"),
    }
    present = [(section, spec.section(section.key)) for section in sections()]
    present = [(section, model) for section, model in present if model is not None]
    owned = any(section.owns_measurement for section, _ in present)
    measurement = None if owned else inputs_of.measurement(spec, location)
    inputs = Inputs(measurement=measurement, day=spec.day, measured=spec.measured)
    for section, model in present:
        results[section.key] = section.run(model, location, inputs)
        _refuse_non_finite(results[section.key], section.key, location)
    with blame(location, "given"):
        results["given"] = given.collect(spec.given, results)
    with blame(location, "headline"):
        quotable.pick(results, list(spec.headline), "headline")
    results["measured"] = inputs_of.measured_result(spec, location, measurement)
    results["links_back"] = inputs_of.links_back(spec, location)
    return results


def render_drafts(results: dict[str, Any], templates_root: Path = TEMPLATES) -> dict[str, str]:
    """Each templates/dayNN/*.j2 becomes a draft named without '.j2'; threads are cut into
    posts that fit their platform and numbered. A thread platform the spec's ``platforms:``
    lists that has no template of its own re-flows the thread it names (``reflow_from``: X's)
    under its own limits, so one thread template feeds every thread platform."""
    env = posts.environment(templates_root)
    folder = day_folder_name(results["day"])
    if (templates_root / folder).is_symlink():  # its files would be read from anywhere
        raise UserError(
            "is a symbolic link; a day's templates are a folder in templates/ itself",
            file=f"templates/{folder}",
        )
    templates = sorted((templates_root / folder).glob("*.j2"))
    for template in templates:  # each names a draft in out/ and a line in the terminal
        if not _DRAFT_NAME.fullmatch(template.name):
            raise UserError(
                "a template's name is letters, digits, '.', '_' and '-' (it names a draft file): "
                f"{ascii(template.name)}",
                file=f"templates/{folder}/",
            )
    if not templates:
        raise UserError(
            "no templates for this day: create linkedin.md.j2 and x-thread.md.j2 (see README)",
            file=f"templates/{folder}/",
        )
    missing = [
        p.draft for p in platforms.required() if not (templates_root / folder / f"{p.draft}.j2").is_file()
    ]
    if missing:
        raise UserError(
            f"no template for {', '.join(missing)}: every day posts there (create {missing[0]}.j2)",
            file=f"templates/{folder}/",
        )
    posts.check_no_typed_numbers(templates_root, [f"{folder}/{t.name}" for t in templates])
    context = template_context(results)
    drafts: dict[str, str] = {}
    rendered: dict[str, str] = {}  # each thread as its template wrote it, before numbering
    for template in templates:
        name = template.name.removesuffix(".j2")
        text = rendered[name] = posts.render(env, f"{folder}/{template.name}", context)
        platform = platforms.by_draft(name)
        if platform is not None and platform.thread:
            text = posts.number_thread(text, platform.post_limits)
        drafts[name] = text
    # The platforms the spec lists (an optional one with a template of its own posts anyway).
    for platform in posting.posted((results.get("inputs") or {}).get("platforms")):
        if platform.draft in drafts:
            continue
        source = platforms.get(platform.reflow_from) if platform.reflow_from and platform.thread else None
        if source is None or source.draft not in rendered:
            raise UserError(
                f"no template for {platform.draft}: the day posts to {platform.name} "
                f"(create {platform.draft}.j2)",
                file=f"templates/{folder}/",
            )
        drafts[platform.draft] = posts.number_thread(rendered[source.draft], platform.post_limits)
    return drafts


def check_drafts(drafts: dict[str, str], charts: list[dict[str, Any]]) -> dict[str, Any]:
    """Run the platform rules on the drafts; raise ChecksFailed naming each offending post."""
    posted = posting.in_drafts(list(drafts))  # the required platforms and each drafted one
    checks: dict[str, Any] = {}
    violations: list[Any] = []
    for platform in posted:
        text = drafts.get(platform.draft)
        per_post, found = (
            platform.check_draft(text, available={c["file"] for c in charts})
            if text is not None
            else ([], [])
        )
        per_post_dicts = [[vars(c) for c in post] for post in per_post]
        # A single post's counts are stored flat; a thread's, one list per post.
        checks[platform.name] = per_post_dicts if platform.thread else sum(per_post_dicts, [])
        violations += found
    for chart in charts:
        for platform in posted:
            violations += check_alt_text(chart["alt_text"], platform=platform.name)
    checks["violations"] = [str(v) for v in violations]
    if violations:
        raise ChecksFailed(checks["violations"])
    return checks


_DRAFT_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.j2")


def _refuse_non_finite(value: Any, where: str, location: SpecLocation) -> None:
    """A section's result holding an infinity or a NaN came from spec values at the edge of
    their range (a rate so small that a time overflows): one line naming the section, not a
    traceback from the JSON writer or "cannot print nan" from a template. Results hold no
    non-finite value on purpose: results.json could not hold it."""
    if isinstance(value, float) and not math.isfinite(value):
        raise UserError(
            f"computes {value} at {where}: a value in this part of the spec is too small or too "
            "large for the arithmetic; bring it into a realistic range",
            file=location.spec_path,
            field=where.split(".")[0],
        )
    if isinstance(value, dict):
        for key, item in value.items():
            _refuse_non_finite(item, f"{where}.{key}", location)
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            _refuse_non_finite(item, f"{where}.{index}", location)


def write_json(path: Path, data: Any, *, root: Path | None = None) -> None:
    # allow_nan=False: `Infinity` is not JSON, and a non-finite figure must never reach a post.
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    atomic.write_text(path, text, what="results", root=root, durable=False)


def build(
    spec_path: Path, out_root: Path, *, force: bool = False, templates_root: Path = TEMPLATES
) -> BuildReport:
    """Build one day into out_root (see the module's docstring). The URLs in its posts are
    looked up among those the last builds found (engine.platforms.urls): a build whose posts
    are unchanged compiles no URL expression."""
    with urls.kept_between_builds():
        return _build(Path(spec_path), out_root, force=force, templates_root=templates_root)


def _build(spec_path: Path, out_root: Path, *, force: bool, templates_root: Path) -> BuildReport:
    spec = load_spec(spec_path)
    target = out_root / day_folder_name(spec.day)
    # What the writes at the end would refuse (a link at out/, out/dayNN or out/index.html),
    # refused before any work: a build that cannot finish changes nothing.
    outdir.check_target(target)
    if not force:
        alt_texts = [p.name for p in target.glob(f"*{audit.ALT_SUFFIX}")]  # none: no folder yet
        outdir.check_edits_fit(target, [*(p.draft for p in platforms.platforms()), *alt_texts])
    atomic.check_target(out_root / "index.html", what="review index", root=out_root)
    results = compute(spec, SpecLocation(spec_path=spec_path))
    drafts = render_drafts(results, templates_root)

    left_out = unavailable_charts(spec, results)
    staging = outdir.Staging.create(target)
    try:
        seen, earlier = _renders_seen(target)  # under the day's lock: the renders now in place
        for name, text in drafts.items():
            atomic.write_text(staging.path / name, text, what="draft", root=out_root, durable=False)
        with _of_the_spec(spec_path):  # a chart the results cannot draw: the spec asked for it
            results["charts"] = draw_charts(spec, results, staging.path, {name for name, _ in left_out})
        if spec.carousel is not None:
            with _of_the_spec(spec_path):  # the spec's own words (its title) a page cannot draw
                results["carousel"] = formats.draw_carousel(
                    spec, results, staging.path, templates_root, {name for name, _ in left_out}
                )
        results["checks"] = check_drafts(drafts, results["charts"])
        results["checks"]["media"] = formats.check_media(staging.path, results)
        write_json(staging.path / "results.json", results, root=out_root)
        page = review.render_day_page(staging.path, results, drafts, fresh=True)
        atomic.write_text(staging.path / "index.html", page, what="review page", root=out_root, durable=False)
        renders = {
            **drafts,
            **{
                p.name: read_text_limited(p, MAX_DRAFT_BYTES, "alt text")
                for p in staging.path.glob(f"*{audit.ALT_SUFFIX}")
            },
        }
        committed = outdir.commit(staging, force=force, keep_lock=True)
    except OSError as exc:
        staging.discard()
        raise outdir.write_failed(exc, target) from exc
    except BaseException:
        staging.discard()
        raise
    # Re-render the page from disk: where a hand edit was kept, it shows the edited draft.
    try:
        write_audit_record(target, renders, seen, earlier, out_root)
        review.write_day_page(target, root=out_root)
        review.write_index(out_root)
    except OSError as exc:
        raise outdir.write_failed(exc, target, after="the day is built, its review page is not") from exc
    finally:
        staging.release()  # held through the writes into the day's folder after the swap
    return BuildReport(
        day=spec.day,
        folder=target,
        written=committed.written,
        kept_edits=committed.kept_edits,
        summary=headline(results),
        warnings=[f"chart '{name}' not drawn: {why}" for name, why in left_out]
        + check_kept_edits(target, committed.checked_edits())
        + audit.listed(audit.folder_findings(target)),
        commit=committed,
    )


@contextlib.contextmanager
def _of_the_spec(spec_path: Path) -> Iterator[None]:
    """A UserError that names no file is about what the spec asked for: it names the spec."""
    try:
        yield
    except UserError as err:
        if err.file:
            raise
        raise UserError(err.message, file=spec_path, field=err.field) from None


def _renders_seen(target: Path) -> tuple[dict[str, str], dict[str, Any]]:
    """The renders the person saw before this build, and the audit's last record of them."""
    return (read_base(target), audit.read_record(target)) if target.is_dir() else ({}, {})


def write_audit_record(
    target: Path, renders: dict[str, str], seen: dict[str, str], earlier: dict[str, Any], root: Path
) -> None:
    """Keep this build's fresh renders (drafts and alt texts) beside them, for the number audit
    of the edits to come (engine.audit): written once the folder is in place, like its review page."""
    atomic.write_json(
        audit.record(renders, seen, earlier),
        target / AUDIT,
        what="audit record",
        ensure_ascii=False,
        root=root,
    )


def check_kept_edits(folder: Path, kept: list[tuple[Path, Path]]) -> list[str]:
    """The platform rules on drafts a person edited: the build kept them, so it checks them too.

    The fresh render passed before anything was written; an edit may not, and the person should
    hear it now rather than when the post is refused.
    """
    if not kept:
        return []

    names = {path.name for path, _ in kept}
    report = check_day_dir(folder)
    return [f"your edited {v}" for v in report.violations if v.draft in names]


def draw_charts(
    spec: DaySpec, results: dict[str, Any], folder: Path, skipped: set[str]
) -> list[dict[str, Any]]:
    """Each chart the spec asks for at its own size, but those in ``skipped`` (charts of an input
    the day does not have yet: unavailable_charts); the LinkedIn image again at LinkedIn's."""
    if not spec.charts:
        return []

    jobs: list[tuple[str, str | None]] = [(name, None) for name in spec.chart_names if name not in skipped]
    if spec.linkedin_image is not None and spec.linkedin_image not in skipped:
        jobs.append((spec.linkedin_image, platforms.get("linkedin").image_size))
    return [charts.draw(name, results, folder, size=size).to_dict() for name, size in jobs]


def unavailable_charts(spec: DaySpec, results: dict[str, Any]) -> list[tuple[str, str]]:
    """(chart, why) for each chart the spec asks for, as an image or on a carousel slide, that
    its results cannot draw yet (a measurement not taken): left out with a warning, so a day
    builds before its bench has run."""
    slides = spec.carousel.slides if spec.carousel is not None else []
    names = list(dict.fromkeys([*spec.chart_names, *(slide.chart for slide in slides if slide.chart)]))
    if not names:
        return []

    reasons = [(name, resolve(name, results).unavailable(results)) for name in names]
    return [(name, why) for name, why in reasons if why is not None]


def headline(results: dict[str, Any]) -> list[str]:
    """A few lines for the terminal: the numbers the post leans on, the spec's ``headline:``
    first when it has one."""
    chosen = results["inputs"].get("headline") or []
    named = quotable.named(results)
    lines = (
        ["headline: " + "; ".join(f"{named[n]['label']}: {named[n]['text']}" for n in chosen)]
        if chosen
        else []
    )
    for section in sections():
        result = results.get(section.key)
        if result and section.headline is not None:
            line = section.headline(result)
            lines += [line] if isinstance(line, str) else list(line or [])
    me = results.get("measured")
    if me:
        lines.append(f"measured: {me['source']} ({me['file']})")
    return lines
