"""The lab section: the day's own script, measured once (``make lab-dayNN``) and read back on
every build, never rerun.

Its pieces: ``spec`` (the section's model: which script, which figures it owes), ``judge`` (a
run against that contract), ``measure`` (``make lab-dayNN``: run, judge, keep), ``results``
(what a build reads back of the measurement). The run itself, contained, is engine.lab.
"""

from __future__ import annotations

import io
from pathlib import Path

from engine.experiments.lab import measure, results
from engine.experiments.lab.spec import LabSection
from engine.sections import SectionExample, register_section

# The example lab measures something real and small: how long a millisecond's sleep takes here.
EXAMPLE_LAB = """\
import time

from labkit import figure

start = time.perf_counter()
time.sleep(0.001)
figure("wait", (time.perf_counter() - start) * 1e9, "ns", about="one 1 ms sleep, timed")
"""


def _measure(spec_path: Path) -> None:
    """What `make lab-dayNN` does before a lab day builds: run the lab once and keep its figures."""
    measure.measure(spec_path, echo=io.StringIO(), status=io.StringIO())


register_section(
    "lab",
    model=LabSection,
    run=results.run,
    title="Lab",
    headline=results.headline,
    review_tables=results.review_tables,
    review_warnings=results.review_warnings,
    owns_measurement=True,
    order=40,
    example=SectionExample(
        {"script": "day02.lab/lab.py", "figures": {"wait": {"unit": "us"}}},
        files={"day02.lab/lab.py": EXAMPLE_LAB},
        measured="latest",
        prepare=_measure,
    ),
)
