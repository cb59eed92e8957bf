"""The one error type for user mistakes.

A UserError carries where the mistake is (a file, and a field or row inside it) and what is
wrong. The CLI prints it as one line, ``file: field: message``, and exits with status 2; a
UserError that found several mistakes at once (a spec's fields) carries the others in ``more``,
one line each.
Anything else that escapes is a bug and keeps its traceback.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

EXIT_USER_ERROR = 2

# What would break the one line, or reach the terminal as a command: C0 and C1 controls (a line
# break, an escape sequence), DEL, and the Unicode line and paragraph separators. A file name,
# a field or a message quoting the input may hold any of them; each is shown as its escape.
_BREAKS_THE_LINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# A line is read, not scrolled: a message quoting a 5,000-digit cell keeps its start and its end
# (the file and field lead, so they always stay) around an ellipsis.
MAX_MESSAGE_CHARS = 600


def one_line(text: str) -> str:
    """``text`` as one line of the terminal, each character that would break it or act as a
    command (a line feed, an escape sequence setting the window's title) shown as its escape:
    for a file name a lab folder holds, printed as it is copied, as for an error."""
    return _BREAKS_THE_LINE.sub(lambda m: repr(m.group())[1:-1], text)


class UserError(Exception):
    """A mistake in the user's input: a spec, a workload file, a flag, a measurement file."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        field: str | None = None,
        more: Sequence[UserError] = (),
    ):
        self.file = str(file) if file is not None else None
        self.field = field
        self.message = message
        self.more = tuple(more)
        super().__init__(self.line())

    def line(self) -> str:
        """The single line the user sees, whatever the input it quotes held."""
        parts = [p for p in (self.file, self.field) if p]
        parts.append(self.message)
        line = one_line(": ".join(parts))
        if len(line) <= MAX_MESSAGE_CHARS:
            return line
        keep = MAX_MESSAGE_CHARS - 1
        return line[: keep - 80] + "…" + line[-80:]

    def lines(self) -> list[str]:
        """This mistake's line, then one for each other mistake found with it."""
        return [self.line(), *(other.line() for other in self.more)]
