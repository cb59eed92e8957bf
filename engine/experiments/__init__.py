"""One experiment per spec section: each turns its section into a plain, JSON-ready dict.

Experiments call the pure engines (kvcache, batching, queueing) and touch files only to read
inputs the spec names (a workload trace, a measurement file, an earlier day's spec).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from engine.errors import UserError


@dataclass(frozen=True)
class Context:
    """Where the spec lives: relative paths in it are resolved against its folder."""

    spec_path: Path

    @property
    def spec_dir(self) -> Path:
        return self.spec_path.parent

    def resolve(self, relative: str) -> Path:
        return (self.spec_dir / relative).resolve()


@contextmanager
def blame(ctx: Context, field: str) -> Iterator[None]:
    """Re-raise a UserError from deeper code as one about this spec file and field."""
    try:
        yield
    except UserError as err:
        if err.file and err.file != str(ctx.spec_path):
            raise  # already names the file at fault (e.g. a workload CSV)
        raise UserError(err.message, file=ctx.spec_path, field=field) from None
