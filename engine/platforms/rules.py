"""What a platform check returns: counts for the review page, violations for the build."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Count:
    """One measured quantity against its limit, e.g. a post's weighted length against 280."""

    name: str
    value: int
    limit: int
    ok: bool

    def __str__(self) -> str:
        return f"{self.name} {self.value}/{self.limit} {'ok' if self.ok else 'FAIL'}"


@dataclass(frozen=True)
class Violation:
    """One broken rule, located precisely enough to fix: which draft, which post, what is wrong."""

    draft: str
    post: int | None
    rule: str
    detail: str

    def __str__(self) -> str:
        where = self.draft if self.post is None else f"{self.draft} post {self.post}"
        return f"{where}: {self.rule}: {self.detail}"


class ChecksFailed(Exception):
    """The drafts broke a platform rule; nothing was written."""

    def __init__(self, violations: list[str]):
        self.violations = violations
        super().__init__("; ".join(violations))
