"""Review pages: drafts shown as the feeds would show them, counts against limits, images with
alt text, where each number came from; static, escaped, and opened in a real browser.

Expected values are worked out by hand from platform-rules.md (a line break spends the rest of
its ~70-character line; `→` weighs 2 on X) rather than by calling the code under test.
"""

from __future__ import annotations

import html
import json
import os
import re
import select
import shutil
import statistics
import struct
import subprocess
import time
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from engine.cli import main
from engine.render import review

from helpers import REPO, load_yaml

HOOK = "Day 37 of 60. The vLLM paper is a queueing trick & not an AI trick."
LINKEDIN = (
    "A" * 50 + "\n" + "B" * 50 + "\n" + "C" * 50 + "\n" + "D" * 50 + " <script>alert(1)</script>\n\n"
    "Static batching: 14.3% GPU busy\nContinuous batching: 72.3% GPU busy\n\n"
    "#SystemDesign #LLM #Inference\n"
)
THREAD = (
    f"1/3 {HOOK}\n---\n"
    "2/3 static → continuous: 5.05x\n\n![the scoreboard](scoreboard.png)\n---\n"
    "3/3 Code: github.com/anurag629/system-design-60-days\n"
)
ALT = "Scoreboard. GPU busy, simulated, 200 requests, 16 slots: static 14.3%, continuous 72.3%."


def tiny_png(width: int = 4, height: int = 3) -> bytes:
    """A valid white RGB PNG, written by hand so these tests need no drawing library."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    raw = b"".join(b"\x00" + b"\xff" * (3 * width) for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def latency(p50: float, p99: float, seconds_per_step: float | None = 0.02) -> dict:
    """The simulator's latency block: percentiles in steps, and in seconds when steps are priced."""
    steps = {"e2e": {"p50": p50, "p99": p99}, "ttft": {"p50": 1.0, "p99": 1.0}}
    if seconds_per_step is None:
        return {"steps": steps}
    timed = {k: {q: v * seconds_per_step for q, v in d.items()} for k, d in steps.items()}
    return {"steps": steps, "seconds": timed}


def day_results(day: int = 37, batching_source: str = "simulated") -> dict:
    rows = [
        {
            "context": c,
            "blocks_per_request": c // 16,
            "bytes_per_request": c * 524288,
            "max_requests": 131072 // c,
        }
        for c in (512, 2048, 8192)
    ]
    return {
        "day": day,
        "title": "LLM serving after the vLLM paper" if day == 37 else "Queues",
        "series": {"name": "60 days of system design", "length": 60},
        "repository": "github.com/anurag629/system-design-60-days",
        "hashtags": ["SystemDesign", "LLM", "Inference"],
        "kv_cache": {
            "source": "calculated",
            "highlight": [2048, 8192],
            "compare": [],
            "main": {
                "label": "7B-class on 80 GiB",
                "model": {"name": "7B-class", "num_layers": 32},
                "gpu": {"name": "H100", "memory_bytes": 80 * 2**30},
                "plan": {
                    "bytes_per_token": 524288,
                    "kv_memory_bytes": 64 * 2**30,
                    "block_size": 16,
                    "num_blocks": 8192,
                    "kv_tokens": 131072,
                    "contexts": rows,
                },
            },
        },
        "batching": {
            "source": batching_source,
            "slots": 16,
            "workload": {"requests": 200, "total_output_tokens": 13280, "longest": 661},
            "multiple": 5.05,
            "ideal_steps": 830,
            "policies": {
                "static": {
                    "steps": 5797,
                    "utilisation": 0.1432,
                    "throughput_tokens_per_step": 2.29,
                    "latency": latency(2724, 5365.07),
                },
                "continuous": {
                    "steps": 1148,
                    "utilisation": 0.723,
                    "throughput_tokens_per_step": 11.57,
                    "latency": latency(345.5, 1018.23),
                },
            },
        },
        "charts": [
            {
                "name": "scoreboard",
                "file": "scoreboard.png",
                "alt_text": ALT,
                "width": 1600,
                "height": 900,
                "platform": "x",
            }
        ],
        "checks": {
            "linkedin": [{"name": "length", "value": 999, "limit": 3000, "ok": True}],
            "x": [[{"name": "length", "value": 111, "limit": 280, "ok": True}]] * 3,
            "violations": [],
        },
    }


def write_day(out: Path, day: int, **kwargs) -> Path:
    folder = out / f"day{day:02d}"
    folder.mkdir(parents=True)
    (folder / "results.json").write_text(json.dumps(day_results(day, **kwargs)), encoding="utf-8")
    (folder / "linkedin.md").write_text(LINKEDIN, encoding="utf-8")
    (folder / "x-thread.md").write_text(THREAD, encoding="utf-8")
    (folder / "scoreboard.png").write_bytes(tiny_png())
    (folder / "scoreboard.alt.txt").write_text(ALT + "\n", encoding="utf-8")
    return folder


@pytest.fixture
def out(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    write_day(root, 37)
    write_day(root, 4)
    (root / "day05").mkdir()  # no results.json: not a built day
    (root / "notes").mkdir()
    return root


class Elements(HTMLParser):
    """Every start tag with its attributes, and the page's text."""

    def __init__(self, html: str):
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, {k: v or "" for k, v in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def with_class(self, name: str) -> list[dict[str, str]]:
        return [a for _, a in self.tags if name in a.get("class", "").split()]


def day_page(out: Path) -> str:
    return review.write_day_page(out / "day37").read_text(encoding="utf-8")


# ---- the LinkedIn draft and its fold ----------------------------------------------------------


def test_linkedin_is_cut_where_the_feed_folds(out: Path) -> None:
    """Three 50-character lines each end in a break that spends a whole ~70-unit line, so the
    ~210 budget is used up exactly after the third line: the fourth is behind 'see more'."""
    page = day_page(out)
    visible = re.search(r'<span class="visible">(.*?)</span>', page, re.S).group(1)
    assert visible == "A" * 50 + "\n" + "B" * 50 + "\n" + "C" * 50
    rest = re.search(r'<span class="rest">(.*?)</span>', page, re.S).group(1)
    assert rest.startswith("D" * 50) and "#SystemDesign" in rest
    assert "see more" in page


def test_a_paragraph_without_breaks_folds_after_210_characters() -> None:
    text = "x" * 300
    assert review.fold_index(text) == 210
    assert review.fold_index(LINKEDIN) == 153  # three 50-character lines and their breaks
    assert review.fold_index("short") == 5


def test_text_is_escaped_not_executed(out: Path) -> None:
    page = day_page(out)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page
    assert "queueing trick &amp; not" in page


def test_a_file_name_that_is_no_file_of_the_folder_is_never_linked_or_shown(out: Path) -> None:
    """results.json names the day's images; a name that is a URL ('javascript:…', '//host/…',
    '../') is neither linked nor loaded, even where a file of that name sits in the folder."""
    folder = out / "day37"
    results = json.loads((folder / "results.json").read_text())
    hostile = ["javascript:alert(document.domain)", "//example.com/x.png", "../day04/scoreboard.png"]
    (folder / "javascript:alert(document.domain)").write_bytes(b"%PDF-")
    results["carousel"] = {
        "file": hostile[0],
        "title": "t",
        "pages": [
            {"number": 1, "kind": "cover", "chart": None, "headline": "h", "body": "b", "preview": p}
            for p in hostile
        ],
    }
    results["charts"] = [{**results["charts"][0], "file": name} for name in hostile]
    (folder / "results.json").write_text(json.dumps(results))
    tags = Elements(day_page(out)).tags
    targets = [a.get("href", "") for t, a in tags if t == "a"] + [
        a.get("src", "") for t, a in tags if t == "img"
    ]
    assert not [t for t in targets if t.startswith(("javascript:", "//", "../day04"))], targets
    # the plain name of a file that is there is still shown
    results["carousel"]["file"] = "carousel.pdf"
    (folder / "carousel.pdf").write_bytes(b"%PDF-")
    (folder / "results.json").write_text(json.dumps(results))
    assert ("a", {"href": "carousel.pdf"}) in Elements(day_page(out)).tags


# ---- the X thread as cards with counts --------------------------------------------------------


def test_thread_is_numbered_cards_with_counts_as_x_counts(out: Path) -> None:
    parsed = Elements(day_page(out))
    cards = parsed.with_class("tweet")
    assert [c["id"] for c in cards] == ["post-1", "post-2", "post-3"]
    lengths = [a for _, a in parsed.tags if a.get("data-name") == "length" and a.get("data-limit") == "280"]
    # post 1: ASCII, one unit per character; post 2: '→' weighs 2 and the image is an attachment;
    # post 3: the URL weighs 23 whatever its length.
    post2 = "2/3 static → continuous: 5.05x"
    post3_prefix = "3/3 Code: "
    assert [int(a["data-value"]) for a in lengths] == [
        len(f"1/3 {HOOK}"),
        len(post2) + 1,
        len(post3_prefix) + 23,
    ]
    images = [a for t, a in parsed.tags if t == "img" and a.get("src") == "scoreboard.png"]
    assert {"the scoreboard", ALT} == {a["alt"] for a in images}


def test_over_limit_post_is_flagged_and_listed(out: Path) -> None:
    (out / "day37" / "x-thread.md").write_text(THREAD.replace("1/3 ", "1/3 " + "word " * 60, 1))
    page = day_page(out)
    parsed = Elements(page)
    failing = parsed.with_class("fail")
    assert any(a.get("data-name") == "length" and int(a["data-value"]) > 280 for a in failing)
    assert "x-thread.md post 1: length" in page


# ---- images, sources, inputs ------------------------------------------------------------------


def test_images_carry_their_alt_text_and_size(out: Path) -> None:
    (out / "day37" / "scoreboard.alt.txt").write_text("Edited alt text.\n")
    page = day_page(out)
    parsed = Elements(page.split('<section id="charts">', 1)[1])
    figure_imgs = [a for t, a in parsed.tags if t == "img" and a.get("width")]
    assert figure_imgs == [
        {"src": "scoreboard.png", "alt": "Edited alt text.", "width": "1600", "height": "900"}
    ]
    assert "Edited alt text." in "".join(parsed.text)


def test_where_numbers_came_from_is_labelled(tmp_path: Path) -> None:
    write_day(tmp_path, 37, batching_source="measured on NVIDIA H100 80GB HBM3")
    page = review.write_day_page(tmp_path / "day37").read_text()
    parsed = Elements(page)
    badges = {(a["class"],) for a in parsed.with_class("badge")}
    assert ("badge measured",) in badges and ("badge calculated",) in badges
    assert "Batching: measured on NVIDIA H100 80GB HBM3" in page
    assert "KV cache: calculated" in page


def test_inputs_show_the_table_with_highlighted_rows(out: Path) -> None:
    page = day_page(out)
    highlighted = re.findall(r'<tr class="highlight">(.*?)</tr>', page, re.S)
    assert len(highlighted) == 2 and "2,048" in highlighted[0] and "8,192" in highlighted[1]
    assert "5,797" in page and "14.3%" in page and "72.3%" in page


def _cells(page: str, title: str) -> tuple[list[str], dict[str, list[str]]]:
    """The results table under the heading `title`: its header, and each row's cells by policy."""
    section = page.split(f"<h3>{title} ", 1)[1].split("<h3>", 1)[0]
    table = section.split('<table class="results">', 1)[1].split("</table>", 1)[0]
    head = re.findall(r"<th>(.*?)</th>", table)
    rows = [
        re.findall(r'<td class="num">(.*?)</td>', row) for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)
    ]
    return head, {r[0]: r for r in rows if r}


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_batching_latency_is_read_from_the_simulators_shape(out: Path) -> None:
    head, rows = _cells(day_page(out), "Batching")
    assert head[-2:] == ["p50 end-to-end (s)", "p99 end-to-end (s)"]
    assert [_number(c) for c in rows["static"][-2:]] == pytest.approx([2724 * 0.02, 5365.07 * 0.02], rel=1e-3)
    assert [_number(c) for c in rows["continuous"][-2:]] == pytest.approx(
        [345.5 * 0.02, 1018.23 * 0.02], rel=1e-3
    )
    # unpriced steps: the simulator writes steps only, and the header says so
    results = json.loads((out / "day37" / "results.json").read_text())
    for name, (p50, p99) in {"static": (2724, 5365.07), "continuous": (345.5, 1018.23)}.items():
        results["batching"]["policies"][name]["latency"] = latency(p50, p99, seconds_per_step=None)
    (out / "day37" / "results.json").write_text(json.dumps(results))
    head, rows = _cells(day_page(out), "Batching")
    assert head[-2:] == ["p50 end-to-end (steps)", "p99 end-to-end (steps)"]
    assert [_number(c) for c in rows["continuous"][-2:]] == pytest.approx([345.5, 1018.23], abs=0.6)


def _replay(lengths: list[int], slots: int) -> dict[str, list[int]]:
    """End step of every request (all arrive at step 0, one token per step), by policy: static
    runs groups of `slots` in arrival order; continuous gives each the earliest free slot."""
    static, t = [], 0
    for g in range(0, len(lengths), slots):
        group = lengths[g : g + slots]
        static += [t + n for n in group]
        t += max(group)
    free = [0] * slots
    continuous = []
    for n in lengths:
        s = min(range(slots), key=lambda i: (free[i], i))
        free[s] += n
        continuous.append(free[s])
    return {"static": static, "continuous": continuous}


@pytest.fixture(scope="module")
def day37_built(built_out: Path) -> Path:
    """days/day37.yaml built for real (once per session)."""
    return built_out / "day37"


def test_a_real_build_shows_batching_latency(day37_built: Path) -> None:
    """The page built from days/day37.yaml shows each policy's p50 and p99 end-to-end latency,
    in seconds, as an independent replay of the lab's workload gives them."""
    spec = load_yaml((REPO / "days" / "day37.yaml").read_text())
    per_step = spec["batching"]["step_time"]["seconds_per_step"]
    workload = (REPO / "days" / spec["batching"]["workload"]["trace"]).read_text().split()
    lengths = [int(v) for v in workload[1:]]
    head, rows = _cells((day37_built / "index.html").read_text(), "Batching")
    assert head[-2:] == ["p50 end-to-end (s)", "p99 end-to-end (s)"]
    for name, ends in _replay(lengths, spec["batching"]["slots"]).items():
        cuts = statistics.quantiles(ends, n=100, method="inclusive")  # linear, like numpy's default
        expected = [cuts[49] * per_step, cuts[98] * per_step]
        assert [_number(c) for c in rows[name][-2:]] == pytest.approx(expected, rel=2e-3), name
        assert "—" not in rows[name]


def test_attachments_under_each_draft(day37_built: Path, tmp_path: Path) -> None:
    """The LinkedIn post's image (the spec's linkedin_image, drawn again at 1080x1350) sits under
    the LinkedIn draft; each X post shows the images its marker lines name, without the markers;
    and the page says what those marker lines are."""
    from engine import charts

    day = tmp_path / "day37"
    shutil.copytree(day37_built, day)
    results = json.loads((day / "results.json").read_text())
    portrait = charts.draw("scoreboard", results, day, size="linkedin_portrait")
    if portrait.path.name not in [c["file"] for c in results["charts"]]:  # the spec's linkedin_image
        results["charts"].append(portrait.to_dict())  # as the pipeline records it
    (day / "results.json").write_text(json.dumps(results))
    page = review.write_day_page(day).read_text()
    linkedin = page.split('<section id="linkedin"', 1)[1].split("</section>", 1)[0]
    x = page.split('<section id="x"', 1)[1].split("</section>", 1)[0]
    attached = [a for t, a in Elements(linkedin).tags if t == "img"]
    assert attached == [
        {
            "src": "scoreboard-linkedin_portrait.png",
            "alt": portrait.alt_text,
            "width": "1080",
            "height": "1350",
        }
    ]
    assert "Attach this image" in linkedin and "kv_fit.png" not in linkedin  # LinkedIn-sized, not chosen
    thread = (day / "x-thread.md").read_text().split("\n---\n")
    cards = x.split('<article class="card tweet"')[1:]
    assert len(cards) == len(thread)
    for post, card in zip(thread, cards):
        named = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", post)
        assert [a["src"] for t, a in Elements(card).tags if t == "img"] == named
        text = re.search(r'<pre class="post">(.*?)</pre>', card, re.S).group(1)
        assert "![" not in text and "](" not in text
    assert sum(1 for c in cards if "<img" in c) == 2  # the scoreboard and the slot timeline
    note = Elements(x).with_class("markers-note")
    assert note and "attachment marker" in x and "delete the marker line" in x


def test_linkedin_image_follows_the_spec_and_markers(out: Path) -> None:
    day = out / "day37"
    results = json.loads((day / "results.json").read_text())
    (day / "kv_fit.png").write_bytes(tiny_png())
    results["charts"].append(
        {
            "name": "kv_fit",
            "file": "kv_fit.png",
            "alt_text": "Log-log chart.",
            "width": 1200,
            "height": 627,
            "platform": "linkedin",
        }
    )
    (day / "results.json").write_text(json.dumps(results))
    linkedin = lambda: day_page(out).split('<section id="linkedin"', 1)[1].split("</section>", 1)[0]  # noqa: E731
    assert "<img" not in linkedin() and "linkedin_image" in linkedin()  # LinkedIn-sized, but not chosen
    results["inputs"] = {"linkedin_image": "kv_fit"}
    (day / "results.json").write_text(json.dumps(results))
    assert [a["src"] for t, a in Elements(linkedin()).tags if t == "img"] == ["kv_fit.png"]
    # a marker line in linkedin.md is an attachment too, and not part of the text that folds
    (day / "linkedin.md").write_text("Hook line.\n\n![the scoreboard](scoreboard.png)\n\nMore text.\n")
    shown = linkedin()
    assert [a["src"] for t, a in Elements(shown).tags if t == "img"] == ["scoreboard.png", "kv_fit.png"]
    visible = re.search(r'<span class="visible">(.*?)</span>', shown, re.S).group(1)
    assert visible == "Hook line.\n\nMore text."


def test_pages_fetch_nothing_from_the_network(out: Path) -> None:
    review.write_review(out)
    for page in (out / "index.html", out / "day37" / "index.html"):
        parsed = Elements(page.read_text())
        assert not [t for t, _ in parsed.tags if t in ("script", "link", "iframe")]
        refs = [a.get("src") or a.get("href") for _, a in parsed.tags if a.get("src") or a.get("href")]
        assert refs and not [r for r in refs if re.match(r"^(https?:)?//", r)]


# ---- from disk: hand edits, the index, the command -------------------------------------------


def test_a_hand_edit_is_what_the_page_shows(out: Path) -> None:
    edited = LINKEDIN.replace("Static batching", "Static batching (my edit)")
    (out / "day37" / "linkedin.md").write_text(edited)
    (out / "day37" / "linkedin.new.md").write_text(LINKEDIN)
    page = day_page(out)
    assert "Static batching (my edit)" in page
    assert "linkedin.new.md" in page


def test_index_lists_built_days_newest_first(out: Path) -> None:
    html = review.render_index(out)
    parsed = Elements(html)
    days = [a["id"] for a in parsed.with_class("day")]
    assert days == ["day37", "day04"]
    hrefs = [a["href"] for t, a in parsed.tags if t == "a"]
    assert "day37/index.html" in hrefs and "day04/linkedin.md" in hrefs
    assert "LLM serving after the vLLM paper" in html and "Queues" in html


def test_write_review_writes_every_page(out: Path) -> None:
    paths = review.write_review(out)
    assert paths == [out / "index.html", out / "day37" / "index.html", out / "day04" / "index.html"]
    assert all(p.is_file() for p in paths)
    assert not (out / "day05" / "index.html").exists()


def test_review_command(out: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["review", "--out", str(out)]) == 0
    printed = capsys.readouterr().out.split()
    assert printed[0] == str(out / "index.html")
    assert main(["review", "--out", str(out / "nowhere")]) == 2


# ---- in a real browser ------------------------------------------------------------------------

PROBE = """<script>
window.addEventListener("load", () => {
  document.body.dataset.images = [...document.images].map(i => i.complete && i.naturalWidth > 0 ? "ok" : "broken").join(",");
  console.log("probe ran");
});
</script>"""


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.environ.get("CI"):
        pytest.fail("chromium is not installed; CI must install it (apt-get install -y chromium)")
    pytest.skip("chromium is not installed (apt-get install chromium); under CI this test fails instead")


# What a page says on its console, as DevTools reports it: console calls, uncaught exceptions,
# and the browser's own entries (a resource that failed to load, a security refusal, …).
CONSOLE = ("Runtime.consoleAPICalled", "Runtime.exceptionThrown", "Log.entryAdded")


def said(event: dict) -> str:
    """One console event as a line of text."""
    params = event["params"]
    if event["method"] == "Runtime.consoleAPICalled":
        return " ".join(str(arg.get("value", arg.get("description", ""))) for arg in params["args"])
    if event["method"] == "Runtime.exceptionThrown":
        return params["exceptionDetails"].get("text", "") + " " + str(params["exceptionDetails"])
    return params["entry"]["text"]


class Chromium:
    """Headless Chromium driven over its DevTools pipe (--remote-debugging-pipe: commands on file
    descriptor 3, replies and events on 4, each a JSON message ending in a NUL byte). One browser
    serves every page of this module, each in a tab of its own: starting the browser is most of
    what opening one page costs."""

    def __init__(self, browser: str, profile: Path) -> None:
        from_us, commands = os.pipe()
        replies, to_us = os.pipe()

        def wire() -> None:  # in the child before exec: the pipe's ends become 3 and 4
            read, write = os.dup(from_us), os.dup(to_us)
            os.dup2(read, 3)
            os.dup2(write, 4)

        flags = [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
        ]
        self.log = profile / "stderr.txt"
        with self.log.open("w") as log:
            # Only 3 and 4 are inherited: every descriptor Python opens is non-inheritable.
            self.process = subprocess.Popen(
                [browser, *flags, "--remote-debugging-pipe"],
                preexec_fn=wire,
                close_fds=False,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        os.close(from_us)
        os.close(to_us)
        self.commands, self.replies = commands, replies
        self.pending = b""
        self.last = 0
        self.events: list[dict] = []

    def call(self, method: str, session: str | None = None, **params: object) -> dict:
        self.last += 1
        message: dict = {"id": self.last, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        while True:
            reply = self.receive()
            if reply.get("id") == self.last:
                assert "error" not in reply, (method, reply)
                return reply.get("result", {})
            self.events.append(reply)

    def receive(self, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self.pending:
            ready, _, _ = select.select([self.replies], [], [], max(deadline - time.monotonic(), 0))
            assert ready, f"Chromium did not answer within {timeout} s: {self.log.read_text()[-2000:]}"
            chunk = os.read(self.replies, 1 << 16)
            assert chunk, f"Chromium closed its DevTools pipe: {self.log.read_text()[-2000:]}"
            self.pending += chunk
        message, _, self.pending = self.pending.partition(b"\0")
        return json.loads(message)

    def until(self, session: str, method: str) -> None:
        while not any(e.get("sessionId") == session and e.get("method") == method for e in self.events):
            self.events.append(self.receive())

    def open(self, page: Path) -> tuple[str, list[str]]:
        """Load the page in a new tab: its DOM as its scripts left it once they and the promises
        they started have run (what `chromium --dump-dom` prints), and what it said on the console."""
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session)
        self.call("Page.navigate", session, url=page.as_uri())
        self.until(session, "Page.loadEventFired")
        settle = "new Promise((done) => setTimeout(done, 0))"  # after the load handlers' promises
        self.call("Runtime.evaluate", session, expression=settle, awaitPromise=True)
        dom = self.call(
            "Runtime.evaluate", session, expression="document.documentElement.outerHTML", returnByValue=True
        )["result"]["value"]
        console = [said(e) for e in self.events if e.get("sessionId") == session and e["method"] in CONSOLE]
        self.events = [e for e in self.events if e.get("sessionId") != session]
        self.call("Target.closeTarget", targetId=target)
        return dom, console

    def close(self) -> int:
        try:
            self.call("Browser.close")
        finally:
            os.close(self.commands)
            code = self.process.wait(timeout=20)
            os.close(self.replies)
        return code


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory):
    running = Chromium(chromium(), tmp_path_factory.mktemp("chromium-profile"))
    yield running
    assert running.close() == 0, running.log.read_text()[-2000:]


def test_page_in_headless_chromium(out: Path, browser: Chromium) -> None:
    """Open the day page in Chromium: the drafts, counts and images are on the rendered DOM, every
    image loads, and the console stays silent except for the probe's own message (which proves
    console output is being captured at all)."""
    page = review.write_day_page(out / "day37")
    probe = page.with_name("_probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "\n</body>"))
    dom, console = browser.open(probe)
    assert "A" * 50 in dom and "see more" in dom and "#SystemDesign" in dom
    assert "1/3 " + HOOK.replace("&", "&amp;") in dom
    assert re.search(r'data-name="length" data-value="\d+" data-limit="280"', dom)
    assert re.search(r'data-name="length" data-value="\d+" data-limit="3000"', dom)
    assert re.search(r'data-images="ok(,ok)+"', dom), re.search(r"data-images=\"[^\"]*\"", dom)
    assert console == ["probe ran"]


# ---- copy buttons: the page a person posts from -------------------------------------------
# The review page is where a person posts from: each copy button must put the paste-ready text
# on the clipboard, checked in headless Chromium with the clipboard captured.
#
# Expected texts are written out by hand from the drafts below (image marker lines and the blank
# line they leave doubled removed, post numbering kept), not computed by the code under test.

COPY_LINKEDIN = (
    "Day 37: a queueing idea, pointed at a GPU.\n\n"
    "![the scoreboard](scoreboard.png)\n\n"
    "Continuous batching: 72.3% GPU busy.\n"
    "Static batching: 14.3%.\n\n"
    "#SystemDesign #LLM\n"
)
EXPECTED = {
    "linkedin": [
        (
            "Day 37: a queueing idea, pointed at a GPU.\n\n"
            "Continuous batching: 72.3% GPU busy.\nStatic batching: 14.3%.\n\n#SystemDesign #LLM"
        )
    ],
    "x": [
        "1/3 Day 37 of 60. The vLLM paper is a queueing trick & not an AI trick.",
        "2/3 static → continuous: 5.05x",
        "3/3 Code: github.com/anurag629/system-design-60-days",
    ],
}

# Replace the clipboard with a recorder, press every copy button in page order, and leave what
# was copied on the DOM for the test to read.
CAPTURE = """<script>
const copied = [];
Object.defineProperty(navigator, "clipboard", {value: {writeText: (text) => { copied.push(text); return Promise.resolve(); }}});
window.addEventListener("load", () => {
  const buttons = [...document.querySelectorAll("button.copy")];
  buttons.forEach((b) => b.click());
  document.body.dataset.kinds = JSON.stringify(buttons.map((b) => b.dataset.kind));
  document.body.dataset.clipboard = JSON.stringify(copied);
});
</script>"""


def test_copy_buttons_put_paste_ready_text_on_the_clipboard(tmp_path: Path, browser: Chromium) -> None:
    folder = write_day(tmp_path / "out", 37)
    (folder / "linkedin.md").write_text(COPY_LINKEDIN, encoding="utf-8")
    page = review.write_day_page(folder)
    probe = page.with_name("_probe.html")
    probe.write_text(page.read_text().replace("<body>", "<body>\n" + CAPTURE, 1))
    dom, console = browser.open(probe)
    assert console == []

    def data(name: str) -> list[str]:
        found = re.search(rf'data-{name}="([^"]*)"', dom)
        assert found, f"the page script did not run: no data-{name}"
        return json.loads(html.unescape(found.group(1)))

    kinds, copied = data("kinds"), data("clipboard")
    by_kind: dict[str, list[str]] = {}
    for kind, text in zip(kinds, copied, strict=True):
        by_kind.setdefault(kind, []).append(text)
    assert by_kind["linkedin"] == EXPECTED["linkedin"]
    assert by_kind["x"] == EXPECTED["x"]
    assert ALT in by_kind["alt"] and all(text == ALT for text in by_kind["alt"])
    # The promise resolved and the button said so.
    assert dom.count(">copied</button>") == len(copied)


def test_copy_texts_are_in_the_static_page(tmp_path: Path) -> None:
    """Without a browser: each post's button carries its text, escaped, beside its image."""
    folder = write_day(tmp_path / "out", 37)
    (folder / "linkedin.md").write_text(COPY_LINKEDIN, encoding="utf-8")
    page = review.write_day_page(folder).read_text(encoding="utf-8")
    assert 'data-copy="2/3 static → continuous: 5.05x"' in page
    assert "![the scoreboard]" not in re.findall(r'data-copy="([^"]*)"', page)[0]
    assert THREAD.count("---") == 2 and page.count('data-kind="x"') == 3
    post = page[page.index('id="post-2"') : page.index('id="post-3"')]
    assert 'class="beside"' in post and 'src="scoreboard.png"' in post and 'data-kind="alt"' in post


def test_the_index_checks_the_drafts_a_person_edited(built_out: Path, tmp_path: Path) -> None:
    """A built day's drafts passed at build; an edit that puts X's first post over 280 is what
    the index reports then, as the day's page does, not the build's pass."""
    from helpers import copy_built

    out = copy_built(built_out, tmp_path / "out")
    assert review.render_index(out).count("rules passed<") == 2
    thread = out / "day37" / "x-thread.md"
    posts = thread.read_text().split("\n---\n")
    thread.write_text("\n---\n".join([posts[0] + " and more" * 40, *posts[1:]]))
    html = review.render_index(out)
    assert "1 rule broken in your edits" in html and html.count("rules passed<") == 1
