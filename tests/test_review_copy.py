"""The review page is where a person posts from: each copy button must put the paste-ready text
on the clipboard, checked in headless Chromium with the clipboard captured.

Expected texts are written out by hand from the drafts below (image marker lines and the blank
line they leave doubled removed, post numbering kept), not computed by the code under test.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
from pathlib import Path

from test_review import ALT, THREAD, chromium, write_day

from engine import review

LINKEDIN = (
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
# was copied on the DOM for --dump-dom to show.
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


def test_copy_buttons_put_paste_ready_text_on_the_clipboard(tmp_path: Path) -> None:
    browser = chromium()
    folder = write_day(tmp_path / "out", 37)
    (folder / "linkedin.md").write_text(LINKEDIN, encoding="utf-8")
    page = review.write_day_page(folder)
    probe = page.with_name("_probe.html")
    probe.write_text(page.read_text().replace("<body>", "<body>\n" + CAPTURE, 1))
    run = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=2000",
            "--dump-dom",
            probe.as_uri(),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=20,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    dom = run.stdout

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
    (folder / "linkedin.md").write_text(LINKEDIN, encoding="utf-8")
    page = review.write_day_page(folder).read_text(encoding="utf-8")
    assert 'data-copy="2/3 static → continuous: 5.05x"' in page
    assert "![the scoreboard]" not in re.findall(r'data-copy="([^"]*)"', page)[0]
    assert THREAD.count("---") == 2 and page.count('data-kind="x"') == 3
    post = page[page.index('id="post-2"') : page.index('id="post-3"')]
    assert 'class="beside"' in post and 'src="scoreboard.png"' in post and 'data-kind="alt"' in post
