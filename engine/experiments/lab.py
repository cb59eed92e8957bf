"""The lab section: the day's own script, measured once (``make lab-dayNN``) and read back on
every build, never rerun."""

from __future__ import annotations

from engine.lab import section as lab
from engine.lab.spec import LabSection
from engine.sections import register_section

register_section(
    "lab",
    model=LabSection,
    run=lab.run,
    title="Lab",
    headline=lab.headline,
    review_tables=lab.review_tables,
    review_warnings=lab.review_warnings,
    owns_measurement=True,
    order=40,
)
