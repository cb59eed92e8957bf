"""The section registry: one registration per kind of experiment a day's spec can ask for.

A section is a top-level key of the spec (``kv_cache``, ``batching``, ``queueing``, …). Its
registration says everything the rest of the engine needs to know about it, once:

- ``key``: the spec's key, the key in results.json and the name templates see;
- ``model``: the pydantic model its part of the spec validates against;
- ``run(section, location, inputs)``: the experiment, one signature for all (measurements and
  other files arrive through ``inputs``), returning a JSON-ready dict with a ``source``;
- ``title``: how the review page names it;
- ``headline(result)``: the line the terminal prints after a build (optional);
- ``review_tables(result)``: the review page's tables of inputs and results (optional);
- ``link_figure(section, location)``: the figure a later day may cite from this one (optional);
- ``example``: a small part of a spec it runs, and any files beside the spec that part reads:
  the shared tests run every registered section's example and hold its results to the rules
  every section's are held to (a labelled source, JSON, a one-line headline, review tables).

The spec, the pipeline, the review page and the links back all loop over this registry, so a
new kind of experiment is one module that calls :func:`register_section`; nothing else is
edited. The built-in sections live in ``engine/experiments/`` and register themselves when
that package's modules are imported (the registry imports them all on first use).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel

from engine.errors import UserError
from engine.limits import resolves_inside
from engine.registry import Registry


@dataclass(frozen=True)
class SpecLocation:
    """Where the spec lives: relative paths in it are resolved against its folder."""

    spec_path: Path

    @property
    def spec_dir(self) -> Path:
        return self.spec_path.parent

    def resolve(self, relative: str) -> Path:
        return (self.spec_dir / relative).resolve()

    def file(self, relative: str, where: str) -> Path:
        """A file the spec names (a trace, an earlier day's spec, a per-operator CSV), which
        must sit in the spec's folder or below it: a day someone else wrote must not have the
        build read /proc/self/environ or a file of the person's elsewhere, and quote it in an
        error. Its path, or one line naming the field."""
        path = PurePosixPath(relative)
        if path.is_absolute() or ".." in path.parts or "\\" in relative:
            raise UserError(
                f"{relative!r} must be a path inside the spec's folder ({self.spec_dir}), like "
                "day37.workload.csv",
                file=self.spec_path,
                field=where,
            )
        if not resolves_inside(self.spec_dir / relative, self.spec_dir):  # no link on the way leads out
            raise UserError(
                f"{relative!r} leads out of the spec's folder ({self.spec_dir}) through a symbolic "
                "link; a file a spec names must be in its folder",
                file=self.spec_path,
                field=where,
            )
        return self.spec_dir / relative

    def config(self, relative: str, where: str) -> Path:
        """A model's config.json the spec names, as the file or the folder that holds it: the
        file read must sit in the spec's folder too (file), so a config.json that links out
        of a folder inside it is refused as the folder would be."""
        path = self.file(relative, where)
        if path.is_dir():
            return self.file(f"{relative.rstrip('/')}/config.json", where)
        return path

    def trace(self, workload: Any, where: str) -> Path | None:
        """The trace a section's workload replays (``where`` names the field), checked to sit
        in the spec's folder as every file it names (file); None for a generated workload."""
        trace = getattr(workload, "trace", None)
        return None if trace is None else self.file(trace, where)


@dataclass(frozen=True)
class Inputs:
    """What a section reads besides its own part of the spec: the day's number, the spec's
    ``measured:`` choice as written, and the GPU-bench measurement that choice picks (None for
    simulated only, or when a present section reads the day's measurement itself)."""

    measurement: Path | None = None
    day: int = 0
    measured: str | None = None


@contextmanager
def blame(location: SpecLocation, field: str) -> Iterator[None]:
    """Re-raise a UserError from deeper code as one about this spec file and field."""
    try:
        yield
    except UserError as err:
        if err.file and err.file != str(location.spec_path):
            raise  # already names the file at fault (e.g. a workload CSV)
        raise UserError(err.message, file=location.spec_path, field=field) from None


Result = dict[str, Any]
RunFn = Callable[[Any, SpecLocation, Inputs], Result]
HeadlineFn = Callable[[Result], "str | list[str] | None"]
TablesFn = Callable[[Result], list[dict[str, Any]]]
WarningsFn = Callable[[Result], list[str]]
LinkFigureFn = Callable[[Any, SpecLocation], "dict[str, Any] | None"]


@dataclass(frozen=True)
class SectionExample:
    """A section's sample: its part of a spec (``spec``), the files beside the spec that part
    reads (``files``: path relative to the spec's folder → text), for day ``day`` with the
    spec's ``measured:`` choice; ``prepare(spec_path)``, when given, makes what the run reads
    and no spec holds, once the spec is written (a lab's measurement: its run)."""

    spec: dict[str, Any]
    files: dict[str, str] = field(default_factory=dict)
    day: int = 2
    measured: str | None = None
    prepare: Callable[[Path], None] | None = None


@dataclass(frozen=True)
class Section:
    """One kind of experiment; see the module docstring for what each field is for."""

    key: str
    model: type[BaseModel]
    run: RunFn
    title: str
    headline: HeadlineFn | None = None
    review_tables: TablesFn | None = None
    link_figure: LinkFigureFn | None = None
    order: int = 100  # where the review page and the terminal list it; ties in key order
    review_warnings: WarningsFn | None = None
    # True for a section that reads days/dayNN.measured/ in its own format (a lab): the build
    # then does not read that folder as a GPU benchmark's.
    owns_measurement: bool = False
    example: SectionExample | None = None


# Every section, discovered in engine/experiments (engine.registry says how).
SECTIONS: Registry[Section] = Registry(
    "section", "engine.experiments", name_of=lambda s: s.key, order_of=lambda s: s.order
)
# The metadata keys of a day's spec: a section may not take one of these names.
RESERVED = frozenset(
    {
        "day",
        "series",
        "title",
        "repository",
        "hashtags",
        "links_back",
        "charts",
        "linkedin_image",
        "measured",
        "inputs",
        "checks",
        "links",
        "carousel",
        "given",
        "headline",
        "platforms",
    }
)


def register_section(
    key: str,
    *,
    model: type[BaseModel],
    run: RunFn,
    title: str,
    headline: HeadlineFn | None = None,
    review_tables: TablesFn | None = None,
    link_figure: LinkFigureFn | None = None,
    order: int = 100,
    review_warnings: WarningsFn | None = None,
    owns_measurement: bool = False,
    example: SectionExample | None = None,
) -> Section:
    """Register a kind of experiment under its spec key (engine.registry's rules: a key another
    module took is refused); a reserved key is refused too."""
    if not key.isidentifier() or key in RESERVED:
        raise ValueError(f"section key {key!r} must be a Python name and not one of {sorted(RESERVED)}")
    section = Section(
        key,
        model,
        run,
        title,
        headline,
        review_tables,
        link_figure,
        order,
        review_warnings,
        owns_measurement,
        example,
    )
    return SECTIONS.add(section)


def unregister_section(key: str) -> None:
    """Remove a registration (for tests that register a toy section)."""
    SECTIONS.remove(key)


def sections() -> list[Section]:
    """Every registered section, in display order (built-ins discovered on first use)."""
    return SECTIONS.all()


def get(key: str) -> Section:
    return SECTIONS.get(key)
