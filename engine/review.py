"""Review pages: out/dayNN/index.html shows a day's drafts as the feeds would, and
out/index.html lists every day built.

Why a page and not the terminal: the last step before posting is a person reading the drafts.
The page shows the LinkedIn post cut where the feed folds it, the X thread as numbered cards
with each post's count against its limit, every image with its alt text and size, and every
number's origin (calculated, simulated, measured on a named device), so a wrong label or a
buried hook is seen before it is posted.

Static files, no server, nothing fetched from the network: CSS is inline, images are the PNGs
beside the page, and Jinja autoescapes every string. Counts come from engine.platforms run on
the draft text shown (so a hand-edited draft is counted as edited); when that module cannot be
imported the page falls back to the counts the build stored in results['checks'].
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jinja2

from engine.errors import UserError
from engine.limits import MAX_DRAFT_BYTES, MAX_RESULTS_BYTES, read_text_limited

TEMPLATES = Path(__file__).resolve().parent.parent / "templates" / "review"
RESULTS = "results.json"
DRAFTS = ("linkedin.md", "x-thread.md")
PAGE = "index.html"
FOLD = 210  # LinkedIn's feed shows about this much before "…see more" (platform-rules.md)
_DAY_DIR = re.compile(r"^day(\d+)$")
_IMAGE = re.compile(r"!\[([^\]]*)\]\(([^)\s]*)\)")  # a Markdown image in a draft: an attachment marker


# ---- public API -------------------------------------------------------------------------------


def render_day_page(day_dir: Path, results: dict[str, Any], drafts: dict[str, str]) -> str:
    """The day's review page as HTML; image paths are relative to day_dir, where it is written."""
    return _environment().get_template("day.html.j2").render(page=day_context(Path(day_dir), results, drafts))


def render_index(out_root: Path) -> str:
    """The list of every built day (a dayNN folder with results.json), newest day first."""
    return _environment().get_template("index.html.j2").render(page=index_context(Path(out_root)))


def write_day_page(day_dir: Path) -> Path:
    """(Re)write day_dir/index.html from what is on disk: results.json, the drafts, the charts."""
    day_dir = Path(day_dir)
    results = json.loads(read_text_limited(day_dir / RESULTS, MAX_RESULTS_BYTES, "results"))
    drafts = {name: read_text_limited(day_dir / name, MAX_DRAFT_BYTES, "draft")
              for name in DRAFTS if (day_dir / name).is_file()}
    path = day_dir / PAGE
    path.write_text(render_day_page(day_dir, results, drafts), encoding="utf-8")
    return path


def write_index(out_root: Path) -> Path:
    """(Re)write out_root/index.html."""
    out_root = Path(out_root)
    out_root.mkdir(parents=True, exist_ok=True)
    path = out_root / PAGE
    path.write_text(render_index(out_root), encoding="utf-8")
    return path


def write_review(out_root: Path) -> list[Path]:
    """Every day's page and the index, from what is on disk (``make review``); index first."""
    out_root = Path(out_root)
    pages = [write_day_page(day_dir) for _, day_dir in built_days(out_root)]
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


def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def day_context(day_dir: Path, results: dict[str, Any], drafts: dict[str, str]) -> dict[str, Any]:
    checks = results.get("checks") or {}
    charts = _charts(results, day_dir)
    linkedin = _linkedin(drafts.get("linkedin.md"), checks, day_dir, charts)
    linkedin["images"] = _unique(linkedin["images"] + linkedin_images(results, charts))
    thread = _thread(drafts.get("x-thread.md"), checks, day_dir, charts)
    violations = linkedin.pop("violations") + thread.pop("violations")
    counted_here = linkedin["counted_here"] or thread["counted_here"]
    if not counted_here:
        violations = list(checks.get("violations", []))
    return {
        "day": results.get("day"),
        "title": results.get("title", ""),
        "series": results.get("series") or {},
        "repository": results.get("repository", ""),
        "hashtags": results.get("hashtags", []),
        "linkedin": linkedin,
        "thread": thread,
        "violations": violations,
        "charts": charts,
        "sources": sources(results),
        "inputs": inputs(results),
        "links_back": results.get("links_back") or [],
        "spec_json": json.dumps(results["inputs"], indent=2, sort_keys=True, ensure_ascii=False)
        if results.get("inputs") else "",
    }


def index_context(out_root: Path) -> dict[str, Any]:
    days = []
    for day, folder in built_days(out_root):
        try:  # another day's file: a corrupt or hand-edited one must not break this build
            results = json.loads(read_text_limited(folder / RESULTS, MAX_RESULTS_BYTES, "results"))
        except (ValueError, RecursionError, UserError):
            results = {}
        if not isinstance(results, dict):
            results = {}
        checks = results.get("checks") or {}
        days.append({
            "day": day,
            "folder": folder.name,
            "title": results.get("title", "(results.json unreadable)"),
            "page": f"{folder.name}/{PAGE}",
            "drafts": [name for name in DRAFTS if (folder / name).is_file()],
            "charts": len(results.get("charts") or []),
            "violations": len(checks.get("violations") or []),
            "sources": sources(results),
        })
    return {"days": days}


def _platforms() -> Any:
    """engine.platforms, imported only when a page is rendered; None if it is not available."""
    try:
        import engine.platforms as platforms
    except ImportError:
        return None
    return platforms


def _count_dicts(counts: list[Any]) -> list[dict[str, Any]]:
    return [c if isinstance(c, dict) else {"name": c.name, "value": c.value, "limit": c.limit, "ok": c.ok}
            for c in counts]


def fold_index(text: str, fold: int = FOLD) -> int:
    """How many characters of `text` the collapsed feed shows before "…see more".

    Uses the platform model (a line break spends the rest of its line) when engine.platforms is
    there, otherwise a plain character cut. The feed position only grows as text is added, so
    the cut is found by bisection.
    """
    platforms = _platforms()
    if platforms is None:
        return min(len(text), fold)
    from engine.platforms.linkedin import feed_position

    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if feed_position(text[:mid], fold) <= fold:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _newer(day_dir: Path, name: str) -> str | None:
    """'linkedin.new.md' when a rebuild kept a hand edit and wrote its render beside it."""
    stem, _, suffix = name.rpartition(".")
    candidate = f"{stem}.new.{suffix}"
    return candidate if (day_dir / candidate).is_file() else None


def _linkedin(text: str | None, checks: dict[str, Any], day_dir: Path,
              charts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"present": text is not None, "newer": _newer(day_dir, "linkedin.md"),
                           "violations": [], "counted_here": False, "counts": [], "images": []}
    if text is None:
        return out
    # An image line in the draft is an attachment, not text: shown as an image, folded without it.
    out["images"] = _attachments(text, day_dir, charts or [])
    shown = _without_markers(text) if out["images"] else text
    cut = fold_index(shown)
    # Line breaks at the cut are shown by the fold marker itself, not as empty lines around it.
    out.update(visible=shown[:cut].rstrip("\n"), rest=shown[cut:].lstrip("\n"), fold=FOLD)
    platforms = _platforms()
    if platforms is not None:
        counts, violations = platforms.check_linkedin(text, draft="linkedin.md")
        out.update(counts=_count_dicts(counts), violations=[str(v) for v in violations], counted_here=True)
    else:
        out["counts"] = _count_dicts(checks.get("linkedin") or [])
    return out


def _thread(text: str | None, checks: dict[str, Any], day_dir: Path,
            charts: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"present": text is not None, "newer": _newer(day_dir, "x-thread.md"),
                           "violations": [], "counted_here": False, "posts": []}
    if text is None:
        return out
    platforms = _platforms()
    posts = platforms.split_thread(text) if platforms else _split_thread(text)
    if platforms is not None:
        per_post, violations = platforms.check_x_thread(posts, draft="x-thread.md")
        out.update(violations=[str(v) for v in violations], counted_here=True)
    else:
        stored = checks.get("x") or []
        per_post = stored if len(stored) == len(posts) else [[] for _ in posts]
    for k, (post, counts) in enumerate(zip(posts, per_post), start=1):
        images = _attachments(post, day_dir, charts or [])
        body = _without_markers(post)
        out["posts"].append({"number": k, "total": len(posts), "text": body, "images": images,
                             "counts": _count_dicts(counts)})
    return out


def _attachments(markdown: str, day_dir: Path, charts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The images a draft's `![alt](file.png)` markers attach, with the chart's own alt text (the
    one to paste) where the file is a recorded chart, else the marker's words."""
    by_file = {c["file"]: c for c in charts}
    found = []
    for alt, src in _IMAGE.findall(markdown):
        chart = by_file.get(src, {})
        found.append({"src": src, "alt": alt, "marker": f"![{alt}]({src})",
                      "alt_text": chart.get("alt_text") or alt, "alt_length": len(chart.get("alt_text") or alt),
                      "width": chart.get("width"), "height": chart.get("height"),
                      "exists": (day_dir / src).is_file()})
    return found


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
    return [{"src": c["file"], "alt": c["alt_text"], "marker": "", "alt_text": c["alt_text"],
             "alt_length": c["alt_length"], "width": c.get("width"), "height": c.get("height"),
             "exists": c["exists"]} for c in picked]


def _unique(images: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: set[str] = set()
    return [i for i in images if not (i["src"] in seen or seen.add(i["src"]))]


def _split_thread(markdown: str) -> list[str]:
    """Posts separated by lines that are exactly '---' (used only without engine.platforms)."""
    posts, current = [], []
    for line in markdown.replace("\r\n", "\n").split("\n"):
        if line == "---":
            posts.append("\n".join(current).strip("\n"))
            current = []
        else:
            current.append(line)
    posts.append("\n".join(current).strip("\n"))
    return [p for p in posts if p.strip()]


def _charts(results: dict[str, Any], day_dir: Path) -> list[dict[str, Any]]:
    """The charts the build recorded; without a record, the PNGs on disk with their .alt.txt."""
    recorded = results.get("charts")
    if recorded is None:
        recorded = []
        for png in sorted(day_dir.glob("*.png")):
            alt = png.with_name(f"{png.stem}.alt.txt")
            recorded.append({"name": png.stem, "file": png.name, "platform": "",
                             "alt_text": alt.read_text(encoding="utf-8").strip() if alt.is_file() else "",
                             "width": None, "height": None})
    charts = []
    for chart in recorded:
        alt_file = day_dir / f"{Path(chart['file']).stem}.alt.txt"
        alt = alt_file.read_text(encoding="utf-8").strip() if alt_file.is_file() else chart.get("alt_text", "")
        charts.append({**chart, "alt_text": alt, "alt_length": len(alt),
                       "exists": (day_dir / chart["file"]).is_file()})
    return charts


# ---- where the numbers came from, and what went in --------------------------------------------

SECTIONS = (("kv_cache", "KV cache"), ("batching", "Batching"), ("queueing", "Queueing"))


def source_kind(source: str) -> str:
    """'measured on NVIDIA H100' → 'measured': the CSS class of a source badge."""
    first = (source.split() or ["other"])[0].lower()
    return first if first in {"calculated", "simulated", "measured"} else "other"


def sources(results: dict[str, Any]) -> list[dict[str, str]]:
    found = []
    for key, label in SECTIONS:
        section = results.get(key)
        if section and section.get("source"):
            found.append({"section": label, "source": str(section["source"]),
                          "kind": source_kind(str(section["source"]))})
    measured = results.get("measured")
    if isinstance(measured, dict) and measured.get("source"):
        found.append({"section": "Measurement", "source": str(measured["source"]),
                      "kind": source_kind(str(measured["source"]))})
    return found


def _num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return "—" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.0f}" if value.is_integer() and abs(value) >= 1 else f"{value:,.4g}"
    return str(value)


def _gib(num_bytes: Any) -> str:
    return f"{num_bytes / 2**30:,.2f} GiB" if isinstance(num_bytes, (int, float)) else "—"


def e2e_latency(policies: dict[str, Any]) -> tuple[str, dict[str, dict[str, Any]]]:
    """(unit, {policy: {'p50': …, 'p99': …}}) for the end-to-end latency columns.

    The simulator writes latency.seconds.e2e when steps are priced, and latency.steps.e2e always;
    older results carry e2e (in steps). Seconds are shown when every policy has them, so one
    column never mixes units; otherwise steps. A policy with neither shows '—'.
    """
    def pick(p: dict[str, Any], unit: str) -> dict[str, Any] | None:
        latency = p.get("latency") or {}
        found = (latency.get(unit) or {}).get("e2e")
        if found is None and unit == "steps":
            found = p.get("e2e")
        return found if isinstance(found, dict) else None

    policies = {name: p for name, p in policies.items() if isinstance(p, dict)}
    if policies and all(pick(p, "seconds") for p in policies.values()):
        return "s", {name: pick(p, "seconds") or {} for name, p in policies.items()}
    return "steps", {name: pick(p, "steps") or {} for name, p in policies.items()}


def inputs(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Tables of the inputs and assumptions behind each section: name → value rows, plus a
    table of per-row results where the section has one."""
    tables: list[dict[str, Any]] = []
    kv = results.get("kv_cache")
    if kv:
        for view in [kv["main"], *kv.get("compare", [])]:
            plan, model, gpu = view.get("plan", {}), view.get("model", {}), view.get("gpu", {})
            rows = [(k.replace("_", " "), _num(v)) for k, v in model.items()]
            rows += [("GPU", gpu.get("name", "—")), ("GPU memory", _gib(gpu.get("memory_bytes")))]
            if view.get("budget"):
                rows.append(("budget", ", ".join(f"{k} {_num(v)}" for k, v in view["budget"].items())))
            rows += [("bytes per token", _num(plan.get("bytes_per_token"))),
                     ("KV cache memory", _gib(plan.get("kv_memory_bytes"))),
                     ("block size (tokens)", _num(plan.get("block_size"))),
                     ("blocks", _num(plan.get("num_blocks")))]
            highlight = set(kv.get("highlight", []))
            table = {"head": ["context", "blocks per request", "memory per request", "requests that fit"],
                     "rows": [{"cells": [_num(r["context"]), _num(r.get("blocks_per_request")),
                                         _gib(r.get("bytes_per_request")), _num(r["max_requests"])],
                               "highlight": r["context"] in highlight} for r in plan.get("contexts", [])]}
            tables.append({"title": f"KV cache: {view.get('label') or model.get('name', '')}",
                           "source": kv.get("source", ""), "kind": source_kind(kv.get("source", "")),
                           "rows": rows, "table": table})
    bt = results.get("batching")
    if bt:
        rows = [("slots", _num(bt.get("slots")))]
        rows += [(f"workload: {k.replace('_', ' ')}", _num(v)) for k, v in (bt.get("workload") or {}).items()
                 if not isinstance(v, (list, dict))]
        for key in ("multiple", "ideal_steps"):
            if key in bt:
                rows.append((key.replace("_", " "), _num(bt[key])))
        policies = bt.get("policies") or {}
        unit, latency = e2e_latency(policies)
        head = ["policy", "steps", "GPU busy", "tokens / step", "makespan (s)", "requests / s",
                f"p50 end-to-end ({unit})", f"p99 end-to-end ({unit})"]
        table = {"head": head, "rows": [{"highlight": False, "cells": [
            name, _num(p.get("steps")), f"{p['utilisation'] * 100:.1f}%" if "utilisation" in p else "—",
            _num(p.get("throughput_tokens_per_step")), _num(p.get("makespan_seconds")),
            _num(p.get("requests_per_second")), _num(latency[name].get("p50")),
            _num(latency[name].get("p99"))]} for name, p in policies.items()]}
        tables.append({"title": "Batching", "source": bt.get("source", ""),
                       "kind": source_kind(bt.get("source", "")), "rows": rows, "table": table})
    qu = results.get("queueing")
    if qu:
        lines = qu.get("lines") or {}
        rows = [(k, _num(v)) for k, v in lines.items() if not isinstance(v, (dict, list))]
        head = ["arrangement", "mean wait (ms)", "p99 wait (ms)"]
        table = {"head": head, "rows": [{"highlight": False, "cells": [
            k.replace("_", " "), _num(v.get("mean_wait_ms")), _num(v.get("p99_wait_ms"))]}
            for k, v in lines.items() if isinstance(v, dict) and "mean_wait_ms" in v]}
        tables.append({"title": "Queueing: shared line against separate lines", "source": qu.get("source", ""),
                       "kind": source_kind(qu.get("source", "")), "rows": rows, "table": table})
        if qu.get("mm1"):
            head = ["utilisation", "mean time in system (ms)", "closed form (ms)"]
            table = {"head": head, "rows": [{"highlight": False, "cells": [
                f"{r['utilisation'] * 100:.0f}%",
                _num(r.get("mean_time_in_system_ms", r.get("mean_sojourn_ms"))),
                _num(r.get("closed_form_mean_ms", (r.get("expected") or {}).get("mean_sojourn_ms")))]}
                for r in qu["mm1"]]}
            tables.append({"title": "Queueing: one server (M/M/1)", "source": qu.get("source", ""),
                           "kind": source_kind(qu.get("source", "")), "rows": [], "table": table})
    return tables
