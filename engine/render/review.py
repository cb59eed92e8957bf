"""Review pages: out/dayNN/index.html shows a day's drafts as the feeds would, and
out/index.html lists every day built.

Why a page and not the terminal: the last step before posting is a person reading the drafts.
The page shows the LinkedIn post cut where the feed folds it, the X thread as numbered cards
with each post's count against its limit, every image with its alt text and size, and every
number's origin (calculated, simulated, measured on a named device), so a wrong label or a
buried hook is seen before it is posted.

Static files, no server, nothing fetched from the network: CSS is inline, images are the PNGs
beside the page, and Jinja autoescapes every string. Counts come from each registered platform's
rules run on the draft text shown, so a hand-edited draft is counted as edited. The page loops
over the registries: one column per platform, one table set per section.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jinja2

from engine import audit
from engine.errors import UserError
from engine.limits import (
    MAX_DRAFT_BYTES,
    MAX_PAGE_RENDER_CHARS,
    MAX_RESULTS_BYTES,
    present,
    read_json_limited,
    read_text_limited,
)
from engine.outdir import atomic, changes
from engine.outdir.manifest import read_manifest_quiet, sha256
from engine.platforms.day_dir import check_day_dir
from engine.platforms.linkedin import FOLD, fold_index
from engine.platforms.registry import Platform, platforms
from engine.render import template_cache
from engine.render.render_env import RenderCapExceeded, Sandbox
from engine.render.review_tables import source_kind
from engine.sections import sections

TEMPLATES = Path(__file__).resolve().parents[2] / "templates" / "review"
RESULTS = "results.json"
PAGE = "index.html"

__all__ = [
    "FOLD",
    "fold_index",
    "render_day_page",
    "render_index",
    "write_day_page",
    "write_index",
    "write_review",
    "built_days",
    "source_kind",
    "sources",
    "inputs",
]


def drafts_of(day_dir: Path) -> dict[str, str]:
    """Every registered platform's draft found in day_dir, by file name."""
    return {
        p.draft: read_text_limited(day_dir / p.draft, MAX_DRAFT_BYTES, "draft", follow_symlinks=False)
        for p in platforms()
        if present(day_dir / p.draft)
    }


_DAY_DIR = re.compile(r"^day(\d+)$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]*)\)")  # a Markdown image in a draft: an attachment marker


# ---- public API -------------------------------------------------------------------------------


def render_day_page(
    day_dir: Path, results: dict[str, Any], drafts: dict[str, str], *, fresh: bool = False
) -> str:
    """The day's review page as HTML; image paths are relative to day_dir, where it is written.
    ``fresh``: the drafts are this build's renders (the staged page), so the number audit has
    nothing to find in them and is not run."""
    return _render("day.html.j2", day_context(Path(day_dir), results, drafts, fresh=fresh))


def render_index(out_root: Path) -> str:
    """The list of every built day (a dayNN folder with results.json), newest day first."""
    return _render("index.html.j2", index_context(Path(out_root)))


def write_day_page(day_dir: Path, *, root: Path | None = None) -> Path:
    """(Re)write day_dir/index.html from what is on disk: results.json, the drafts, the charts.
    ``root`` is the output folder (default: day_dir's parent): nothing below it may be a link."""
    day_dir = Path(day_dir)
    path = day_dir / PAGE
    root = day_dir.parent if root is None else root
    atomic.check_target(path, what="review page", root=root)  # a link on the way: refused unread
    try:
        results = read_json_limited(day_dir / RESULTS, MAX_RESULTS_BYTES, "results", follow_symlinks=False)
    except UserError as err:
        raise UserError(
            f"not readable JSON ({err.message}); rebuild the day to replace it",
            file=day_dir / RESULTS,
            field=err.field,
        ) from None
    if not isinstance(results, dict):
        raise UserError(
            "not a build's results (not a JSON object); rebuild the day to replace it", file=day_dir / RESULTS
        )
    drafts = drafts_of(day_dir)
    try:
        page = render_day_page(day_dir, results, drafts)
    except UserError:
        raise
    except (AttributeError, KeyError, TypeError, ValueError, jinja2.UndefinedError) as exc:
        # The file on disk is not what a build writes (edited by hand, or by another version):
        # the page cannot be made from it; the build that writes it again can.
        raise UserError(
            f"not a build's results ({type(exc).__name__}: {str(exc)[:80]}); rebuild the day to replace it",
            file=day_dir / RESULTS,
        ) from None
    return atomic.write_text(path, page, what="review page", root=root)


def write_index(out_root: Path) -> Path:
    """(Re)write out_root/index.html."""
    out_root = Path(out_root)
    return atomic.write_text(out_root / PAGE, render_index(out_root), what="review index", root=out_root)


def write_review(out_root: Path) -> list[Path]:
    """Every day's page and the index, from what is on disk (``make review``); index first."""
    out_root = Path(out_root)
    pages = [write_day_page(day_dir, root=out_root) for _, day_dir in built_days(out_root)]
    return [write_index(out_root), *pages]


def built_days(out_root: Path) -> list[tuple[int, Path]]:
    """(day, folder) for each out_root/dayNN holding results.json, newest day first."""
    if not out_root.is_dir():
        return []
    found = []
    for child in out_root.iterdir():
        match = _DAY_DIR.match(child.name)
        if match and child.is_dir() and (child / RESULTS).is_file():
            found.append((int(match.group(1)), child))
    return sorted(found, reverse=True)


# ---- page contexts: everything the templates show, already formatted ---------------------------


def _render(template: str, page: dict[str, Any]) -> str:
    """One page through the sandbox; a page past its caps (a results file far beyond any real
    day's) is one line naming the template, like a draft's."""
    try:
        return _environment().get_template(template).render(page=page)
    except RenderCapExceeded as exc:
        raise UserError(str(exc), file=f"templates/review/{template}") from None


def _environment() -> jinja2.Environment:
    """The pages' environment: the drafts' sandbox (engine.render.render_env), HTML-escaped. It prints
    values as they are (no rule for numbers): its templates are the engine's, not a day's, and
    the sandbox is there for what results.json may hold."""
    return Sandbox(
        max_chars=MAX_PAGE_RENDER_CHARS,
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        bytecode_cache=template_cache.REVIEW,
    )


def day_context(
    day_dir: Path, results: dict[str, Any], drafts: dict[str, str], *, fresh: bool = False
) -> dict[str, Any]:
    charts = _charts(results, day_dir)
    findings = [] if fresh else audit.folder_findings(day_dir, drafts)
    columns = [
        _platform(
            p, drafts.get(p.draft), day_dir, charts, results, [f for f in findings if f.draft == p.draft]
        )
        for p in platforms()
        if p.required or p.draft in drafts
    ]
    violations = [v for column in columns for v in column.pop("violations")]
    return {
        "day": results.get("day"),
        "title": results.get("title", ""),
        "series": results.get("series") or {},
        "repository": results.get("repository", ""),
        "hashtags": results.get("hashtags", []),
        "platforms": columns,
        "violations": violations,
        "numbers": audit.listed(findings),
        "untraced": len(findings),
        "warnings": warnings(results),
        "charts": charts,
        "carousel": carousel(results, day_dir),
        "sources": sources(results),
        "inputs": inputs(results),
        "links_back": results.get("links_back") or [],
        "spec_json": json.dumps(results["inputs"], indent=2, sort_keys=True, ensure_ascii=False)
        if results.get("inputs")
        else "",
        "changes": _changes().page_context(day_dir),
    }


def index_context(out_root: Path) -> dict[str, Any]:
    days = []
    for day, folder in built_days(out_root):
        if folder.is_symlink():  # a day folder linked in from elsewhere: no build's, left off unread
            continue
        try:  # another day's file: a corrupt or hand-edited one must not break this build
            results = read_json_limited(folder / RESULTS, MAX_RESULTS_BYTES, "results", follow_symlinks=False)
        except UserError:
            results = {}
        if not isinstance(results, dict):
            results = {}
        # Each part checked for its type: a hand-edited file shows what is readable of it.
        found = results.get("checks")
        checks: dict[str, Any] = found if isinstance(found, dict) else {}
        title = results.get("title")
        charts, violations = results.get("charts"), checks.get("violations")
        drafts = [p.draft for p in platforms() if present(folder / p.draft)]  # a link too: not ready
        broken = len(violations) if isinstance(violations, list) else 0
        edited = _edited(folder, drafts)
        if edited:  # the build checked its own render; the person's text is checked as it is now
            try:
                broken = len(check_day_dir(folder).violations)
            except UserError:
                broken = max(broken, 1)  # a draft that cannot be read is not ready to post
        days.append(
            {
                "day": day,
                "folder": folder.name,
                "title": title if isinstance(title, str) else "(results.json unreadable)",
                "page": f"{folder.name}/{PAGE}",
                "drafts": drafts,
                "charts": len(charts) if isinstance(charts, list) else 0,
                "violations": broken,
                "edited": edited,
                "sources": sources(results),
            }
        )
    return {"days": days}


def _edited(folder: Path, drafts: list[str]) -> list[str]:
    """The drafts in a day's folder that are not as the engine wrote them (the manifest's
    hashes): the person's edits, which the build's own check did not see."""
    written = read_manifest_quiet(folder)
    edited = []
    for name in drafts:
        try:
            if written.get(name) != sha256(folder / name):
                edited.append(name)
        except UserError:  # over the day folder's file limit: not the engine's
            edited.append(name)
    return edited


def _changes() -> Any:
    return changes


def _count_dicts(counts: list[Any]) -> list[dict[str, Any]]:
    return [{"name": c.name, "value": c.value, "limit": c.limit, "ok": c.ok} for c in counts]


def _newer(day_dir: Path, name: str) -> str | None:
    """'linkedin.new.md' when a rebuild kept a hand edit and wrote its render beside it."""
    stem, _, suffix = name.rpartition(".")
    candidate = f"{stem}.new.{suffix}"
    return candidate if (day_dir / candidate).is_file() else None


def _platform(
    platform: Platform,
    text: str | None,
    day_dir: Path,
    charts: list[dict[str, Any]],
    results: dict[str, Any],
    findings: list[audit.Finding] | None = None,
) -> dict[str, Any]:
    """One platform's column: its posts as the feed shows them, each with its counts, and each
    number that traces to no result marked (``findings``, engine.audit). The text shown, counted
    and copied is the posted one: accepted numbers (``{=74.1%}``) written plain."""
    findings = findings or []
    out: dict[str, Any] = {
        "name": platform.name,
        "title": platform.title,
        "draft": platform.draft,
        "thread": platform.thread,
        "present": text is not None,
        "newer": _newer(day_dir, platform.draft),
        "violations": [],
        "posts": [],
        "images": [],
        "chosen_image": platform.name == "linkedin",
    }
    if text is None:
        return out
    text = audit.strip_accepted(text)
    per_post, violations = platform.check_draft(text)
    out["violations"] = [str(v) for v in violations]
    if platform.thread:
        posts = platform.posts(text)
        for k, (post, counts) in enumerate(zip(posts, per_post), start=1):
            out["posts"].append(
                {
                    "number": k,
                    "total": len(posts),
                    "text": _without_markers(post),
                    "marked": audit.segments(_without_markers(post), findings),
                    "images": _attachments(post, day_dir, charts),
                    "counts": _count_dicts(counts),
                }
            )
        return out
    # A single post: an image line in it is an attachment, not text, shown as an image and
    # folded without it.
    markers = _attachments(text, day_dir, charts)
    chosen = linkedin_images(results, charts) if out["chosen_image"] else []
    out["images"] = _unique(markers + chosen)
    shown = _without_markers(text) if markers else text
    cut = platform.fold_at(shown) if platform.fold_at is not None else len(shown)
    # Line breaks at the cut are shown by the fold marker itself, not as empty lines around it.
    visible, rest = shown[:cut].rstrip("\n"), shown[cut:].lstrip("\n")
    marked = audit.segments(shown, findings)
    out.update(
        visible=visible,
        rest=rest,
        visible_marked=_cut(marked, 0, len(visible)),
        rest_marked=_cut(marked, len(shown) - len(rest), len(shown)),
        fold=FOLD,
        counts=_count_dicts(per_post[0]),
        paste=shown,
    )
    return out


def _cut(pieces: list[tuple[str, str | None]], start: int, end: int) -> list[tuple[str, str | None]]:
    """The marked pieces of a text (audit.segments) between two of its offsets."""
    out, at = [], 0
    for words, why in pieces:
        lo, hi = max(start, at), min(end, at + len(words))
        if lo < hi:
            out.append((words[lo - at : hi - at], why))
        at += len(words)
    return out


def _attachments(markdown: str, day_dir: Path, charts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The images a draft's `![alt](file.png)` markers attach, with the chart's own alt text (the
    one to paste) where the file is a recorded chart, else the marker's words."""
    by_file = {c["file"]: c for c in charts}
    found = []
    for alt, src in _IMAGE.findall(markdown):
        chart = by_file.get(src, {})
        found.append(
            {
                "src": src,
                "alt": alt,
                "marker": f"![{alt}]({src})",
                "alt_text": chart.get("alt_text") or alt,
                "alt_length": len(chart.get("alt_text") or alt),
                "width": chart.get("width"),
                "height": chart.get("height"),
                "exists": on_page(day_dir, src),
            }
        )
    return found


# A file of the day's folder as results.json and the drafts name one: a relative path of plain
# names ('scoreboard.png', 'carousel/page-01.png'). Nothing else is put in a link or an image's
# source: 'javascript:…', '//host/x.png' or '../' would take the page elsewhere.
_LOCAL_FILE = re.compile(r"[\w][\w.\- ]*(?:/[\w][\w.\- ]*)*")


def on_page(day_dir: Path, name: Any) -> bool:
    """Whether ``name`` is a file of the day's folder that the page may show or link (see
    _LOCAL_FILE), and is there."""
    return isinstance(name, str) and bool(_LOCAL_FILE.fullmatch(name)) and (day_dir / name).is_file()


def _without_markers(markdown: str) -> str:
    """The draft as pasted: attachment markers removed (a line that held only a marker goes, and
    so does the blank line it leaves doubled), trailing spaces and edge blank lines gone."""
    lines: list[str] = []
    dropped = False
    for line in markdown.split("\n"):
        bare = _IMAGE.sub("", line).rstrip()
        if not bare and _IMAGE.search(line):
            dropped = True  # a marker on a line of its own
            continue
        if not bare and dropped and lines and not lines[-1]:
            continue  # the blank line around a dropped marker, now doubled
        dropped = False
        lines.append(bare)
    return "\n".join(lines).strip("\n")


def linkedin_images(results: dict[str, Any], charts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The chart(s) to attach to the LinkedIn post.

    Only charts recorded for LinkedIn (platform 'linkedin') qualify, and not every one of them:
    several charts are drawn at a LinkedIn size by default without being meant for the post.
    The post's image is the spec's `linkedin_image` (results['linkedin_image'] or
    results['inputs']['linkedin_image']), preferring its second render at a LinkedIn size
    (`<name>-linkedin_portrait.png`) over a default-size file; with no name recorded, any such
    second render, or an entry marked 'attach'.
    """
    chosen = results.get("linkedin_image") or (results.get("inputs") or {}).get("linkedin_image")
    mine = [c for c in charts if c.get("platform") == "linkedin"]
    redrawn = [c for c in mine if Path(c["file"]).stem != c.get("name")]
    if chosen:
        picked = [c for c in mine if c.get("name") == chosen]
        picked = [c for c in picked if c in redrawn] or picked
    else:
        picked = [c for c in mine if c in redrawn or c.get("attach")]
    return [
        {
            "src": c["file"],
            "alt": c["alt_text"],
            "marker": "",
            "alt_text": c["alt_text"],
            "alt_length": c["alt_length"],
            "width": c.get("width"),
            "height": c.get("height"),
            "exists": c["exists"],
        }
        for c in picked
    ]


def _unique(images: list[dict[str, Any]]) -> list[dict[str, Any]]:
    by_src: dict[str, dict[str, Any]] = {}
    for image in images:
        by_src.setdefault(image["src"], image)
    return list(by_src.values())


def _charts(results: dict[str, Any], day_dir: Path) -> list[dict[str, Any]]:
    """The charts the build recorded; without a record, the PNGs on disk with their .alt.txt."""
    recorded = results.get("charts")
    if recorded is None:
        recorded = []
        for png in sorted(day_dir.glob("*.png")):
            alt_file = png.with_name(f"{png.stem}.alt.txt")
            recorded.append(
                {
                    "name": png.stem,
                    "file": png.name,
                    "platform": "",
                    "alt_text": _alt_text(alt_file, ""),
                    "width": None,
                    "height": None,
                }
            )
    charts = []
    for chart in recorded:
        alt_path = day_dir / f"{Path(chart['file']).stem}.alt.txt"
        alt = audit.strip_accepted(  # as posted: an accepted number ({=74.1%}) plain
            _alt_text(alt_path, chart.get("alt_text", ""))
        )
        charts.append(
            {**chart, "alt_text": alt, "alt_length": len(alt), "exists": on_page(day_dir, chart["file"])}
        )
    return charts


def _alt_text(path: Path, otherwise: str) -> str:
    """A chart's alt text as the folder has it (the person may have edited it), read as a draft
    is; ``otherwise`` where there is no such file."""
    if not present(path):
        return otherwise
    text = read_text_limited(path, MAX_DRAFT_BYTES, "alt text", follow_symlinks=False)
    return text.replace("\r\n", "\n").replace("\r", "\n").strip()  # line ends as text mode reads them


def carousel(results: dict[str, Any], day_dir: Path) -> dict[str, Any] | None:
    """The LinkedIn carousel's pages in order (their PNG previews), its PDF and its file counts."""
    record = results.get("carousel")
    if not record:
        return None
    media = ((results.get("checks") or {}).get("media") or {}).get(record["file"], [])
    pages = [{**page, "exists": on_page(day_dir, page["preview"])} for page in record.get("pages", [])]
    return {
        "file": record["file"],
        "title": record.get("title", ""),
        "exists": on_page(day_dir, record["file"]),
        "width": record.get("width_pt"),
        "height": record.get("height_pt"),
        "pages": pages,
        "counts": list(media),
    }


# ---- where the numbers came from, and what went in --------------------------------------------


def warnings(results: dict[str, Any]) -> list[str]:
    """Notices a section wants above everything else (a lab changed since it was measured)."""
    found: list[str] = []
    for section in sections():
        result = results.get(section.key)
        if result and section.review_warnings is not None:
            found += section.review_warnings(result)
    return found


def sources(results: dict[str, Any]) -> list[dict[str, str]]:
    """Where each section's numbers came from (calculated, simulated, measured on …)."""
    found = []
    for section in sections():
        result = results.get(section.key)
        if isinstance(result, dict) and result.get("source"):
            found.append(
                {
                    "section": section.title,
                    "source": str(result["source"]),
                    "kind": source_kind(str(result["source"])),
                }
            )
    measured = results.get("measured")
    if isinstance(measured, dict) and measured.get("source"):
        found.append(
            {
                "section": "Measurement",
                "source": str(measured["source"]),
                "kind": source_kind(str(measured["source"])),
            }
        )
    return found


def inputs(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Tables of the inputs and assumptions behind each section: name → value rows, plus a
    table of per-row results where the section has one (each section's review_tables)."""
    tables: list[dict[str, Any]] = []
    for section in sections():
        result = results.get(section.key)
        if result and section.review_tables is not None:
            tables += section.review_tables(result)
    return tables
