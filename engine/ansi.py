"""What a terminal would finally show of a program's output: its lines, as runs of coloured text.

Why emulate instead of stripping: a transcript is the bytes the program wrote, not the screen
the person saw. A progress line (``10%\\r20%\\r100%``) is three writes over one row; a backspace
moves the cursor back and the next character overwrites; ``ESC[K`` erases the rest of the row.
Drawing the bytes as text would show all three percentages, or escape bytes as garbage. So each
line is replayed onto a row of cells, the way a terminal replays it, and what is left on the row
is what the screenshot draws.

What is kept: the text; the foreground colour set by SGR (``ESC[...m``: the 8 basic and 8
bright colours, bold making a basic colour bright, and 256-colour and 24-bit colours too, since
their parameters must be read anyway to find where they end). What is dropped: every other
escape (backgrounds, cursor moves between rows, window titles and other OSC strings ended by
BEL or ``ESC \\``, charset selections) and every other control character. No escape byte or
control character ever reaches the output.

One row per ``\\n``; cursor moves within the row (``\\r``, backspace, tab stops every 8 columns,
``ESC[nC``, ``ESC[nD``, ``ESC[nG``) are followed. Each code point takes one column: the
screenshot's font is monospace, and wide (CJK) characters are rare in a lab's output.
"""

from __future__ import annotations

from dataclasses import dataclass, field

Colour = str | None  # '#RRGGBB', or None for the window's default text colour
Run = tuple[str, Colour]  # text drawn in one colour
Line = list[Run]

ESC = "\x1b"
TAB_STOP = 8
MAX_CURSOR = 1024  # a cursor move past this column is a broken sequence, not a wider screen

# The 16 colours, chosen to read on the window's near-black (#1E1F22): "black" is a grey that
# stays visible, and each bright colour is a lighter version of its basic one.
PALETTE = (
    "#5C6370",  # black
    "#F07178",  # red
    "#8BD17C",  # green
    "#E6C07B",  # yellow
    "#61AFEF",  # blue
    "#C678DD",  # magenta
    "#56B6C2",  # cyan
    "#C8CCD4",  # white
    "#7F848E",  # bright black
    "#FF9AA2",  # bright red
    "#B5F2A6",  # bright green
    "#FFE2A1",  # bright yellow
    "#9CD0FF",  # bright blue
    "#E5B3F5",  # bright magenta
    "#8FE3EE",  # bright cyan
    "#FFFFFF",  # bright white
)
BOLD_DEFAULT = "#FFFFFF"  # bold text in the default colour: the brightest white
_CUBE = (0, 95, 135, 175, 215, 255)  # xterm's 6 levels per channel of the 256-colour cube


def render(text: str) -> list[Line]:
    """The rows a terminal shows after ``text`` was written to it, each as runs of text in one
    colour, trailing spaces dropped. A final ``\\n`` ends the last row; it does not start one."""
    screen = _Screen()
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == ESC or ch in ("\x9b", "\x9d"):  # ESC, or the one-byte CSI and OSC of C1
            i = screen.escape(text, i)
            continue
        screen.put(ch)
        i += 1
    return screen.finish()


def plain(text: str) -> str:
    """``text`` as one line of printable characters, its rows joined by spaces: for a command or
    a machine's name drawn in a title, or written into alt text."""
    return " ".join(line_text(line) for line in render(text) if line_text(line))


def line_text(line: Line) -> str:
    """A row's characters, without their colours."""
    return "".join(text for text, _ in line)


def cells(line: Line) -> list[tuple[str, Colour]]:
    """A row as one (character, colour) pair per column."""
    return [(ch, colour) for text, colour in line for ch in text]


def runs(row: list[tuple[str, Colour]]) -> Line:
    """Cells back into runs: neighbouring cells of one colour make one run."""
    out: Line = []
    for ch, colour in row:
        if out and out[-1][1] == colour:
            out[-1] = (out[-1][0] + ch, colour)
        else:
            out.append((ch, colour))
    return out


@dataclass
class _Pen:
    """The SGR state that matters here: the foreground (a palette index or an RGB colour)."""

    fg: int | str | None = None  # 0..15 (SGR 30-37, 90-97), '#RRGGBB' (38;...), None: default
    bold: bool = False

    def colour(self) -> Colour:
        if self.fg is None:
            return BOLD_DEFAULT if self.bold else None
        if isinstance(self.fg, str):
            return self.fg
        index = self.fg + 8 if self.bold and self.fg < 8 else self.fg  # bold: the bright colour
        return _indexed(index)

    def apply(self, params: str) -> None:
        """One SGR sequence's parameters, e.g. '1;31', '38;5;208', '' (a reset)."""
        fields = params.split(";") if params else ["0"]
        i = 0
        while i < len(fields):
            head, *sub = fields[i].split(":")
            code = int(head) if head.isdigit() else 0
            i += 1
            if code in (38, 48):  # extended colour: 5;n or 2;r;g;b, as ';' or ':' parameters
                colour, used = _extended(sub if sub else fields[i:], colon=bool(sub))
                if not sub:
                    i += used
                if code == 38 and colour is not None:  # resolved now: bold does not brighten it
                    self.fg = _indexed(colour) if isinstance(colour, int) else colour
            elif code == 0:
                self.fg, self.bold = None, False
            elif code == 1:
                self.bold = True
            elif code == 22:
                self.bold = False
            elif 30 <= code <= 37:
                self.fg = code - 30
            elif 90 <= code <= 97:
                self.fg = code - 90 + 8
            elif code == 39:
                self.fg = None
            # everything else (backgrounds, italics, underline, blink, reverse) is not drawn


def _extended(args: list[str], colon: bool) -> tuple[int | str | None, int]:
    """The colour of a 38/48 sequence's arguments (``5;n`` or ``2;r;g;b``; with colons
    ``2::r:g:b`` may name a colour space first), and how many ';' fields it used."""
    kind = args[0] if args else ""
    if kind == "5":
        value = args[1] if len(args) > 1 else ""
        return (int(value) if value.isdigit() and int(value) <= 255 else None), 2
    if kind == "2":
        rgb = args[-3:] if colon else args[1:4]
        if len(args) >= 4 and len(rgb) == 3 and all(c.isdigit() for c in rgb):
            r, g, b = (min(int(c), 255) for c in rgb)
            return f"#{r:02X}{g:02X}{b:02X}", 4
        return None, 4
    return None, 1 if args else 0


def _indexed(index: int) -> str:
    """xterm's 256 colours: the 16 of the palette, a 6×6×6 cube, then 24 greys."""
    if index < 16:
        return PALETTE[index]
    if index < 232:
        r, g, b = (_CUBE[(index - 16) // 36], _CUBE[(index - 16) // 6 % 6], _CUBE[(index - 16) % 6])
        return f"#{r:02X}{g:02X}{b:02X}"
    grey = 8 + 10 * (index - 232)
    return f"#{grey:02X}{grey:02X}{grey:02X}"


@dataclass
class _Screen:
    """Rows written so far, the row being written, its cursor and the pen."""

    done: list[Line] = field(default_factory=list)
    row: list[tuple[str, Colour]] = field(default_factory=list)
    cursor: int = 0
    pen: _Pen = field(default_factory=_Pen)

    def put(self, ch: str) -> None:
        if ch == "\n":
            self.done.append(self._finished_row())
            self.row, self.cursor = [], 0
            return
        if ch == "\r":
            self.cursor = 0
        elif ch == "\b":
            self.cursor = max(0, self.cursor - 1)
        elif ch == "\t":
            self.cursor = min((self.cursor // TAB_STOP + 1) * TAB_STOP, MAX_CURSOR)
        elif ch < " " or "\x7f" <= ch <= "\x9f":
            pass  # any other control character (BEL, NUL, DEL, C1): nothing on the screen
        else:
            self._write(ch)

    def _write(self, ch: str) -> None:
        while len(self.row) < self.cursor:
            self.row.append((" ", None))
        cell = (ch, self.pen.colour())
        if self.cursor < len(self.row):
            self.row[self.cursor] = cell
        else:
            self.row.append(cell)
        self.cursor += 1

    def escape(self, text: str, i: int) -> int:
        """Act on (or skip) the escape sequence at ``text[i]``; the index just past it."""
        n = len(text)
        if text[i] == "\x9b":
            return self._csi(text, i + 1)
        if text[i] == "\x9d":
            return _string_end(text, i + 1)
        if i + 1 >= n:
            return n  # a lone ESC at the end: nothing
        kind = text[i + 1]
        if kind == "[":
            return self._csi(text, i + 2)
        if kind in "]PX^_":  # OSC, DCS, SOS, PM, APC: a string up to BEL or ESC \
            return _string_end(text, i + 2)
        if kind in "()*+-./":  # a charset selection: one more character names the set
            return min(i + 3, n) if i + 2 < n and text[i + 2] != "\n" else i + 2
        if kind == "\n":
            return i + 1  # a stray ESC before a newline: the newline still ends the row
        return i + 2  # a two-character escape (ESC 7, ESC =, ESC M, ...): not drawn

    def _csi(self, text: str, j: int) -> int:
        """A control sequence from its parameters at ``text[j]``: SGR sets the pen, K erases,
        C/D/G move the cursor within the row; any other is skipped. A sequence broken off by a
        character that cannot be in it ends there, and that character is written normally."""
        n = len(text)
        start = j
        while j < n and "0" <= text[j] <= "?":  # parameter bytes
            j += 1
        params = text[start:j]
        while j < n and " " <= text[j] <= "/":  # intermediate bytes
            j += 1
        if j >= n or not ("@" <= text[j] <= "~"):
            return j  # unfinished: dropped
        final = text[j]
        private = params[:1] in ("<", "=", ">", "?")
        if not private:
            self._control(final, params)
        return j + 1

    def _control(self, final: str, params: str) -> None:
        if final == "m":
            self.pen.apply(params)
            return
        first = params.split(";")[0]
        count = int(first) if first.isdigit() else 0
        if final == "K":  # erase in line: 0 to the end, 1 from the start, 2 all
            if count == 0:
                del self.row[self.cursor :]
            elif count == 1:
                for k in range(min(self.cursor + 1, len(self.row))):
                    self.row[k] = (" ", None)
            elif count == 2:
                self.row = []
        elif final == "C":
            self.cursor = min(self.cursor + max(count, 1), MAX_CURSOR)
        elif final == "D":
            self.cursor = max(0, self.cursor - max(count, 1))
        elif final == "G":
            self.cursor = min(max(count, 1) - 1, MAX_CURSOR)

    def _finished_row(self) -> Line:
        row = list(self.row)
        while row and row[-1][0] == " ":
            row.pop()
        return runs(row)

    def finish(self) -> list[Line]:
        if self.row:  # an unfinished last row with something on it
            self.done.append(self._finished_row())
            self.row, self.cursor = [], 0
        return self.done


def _string_end(text: str, j: int) -> int:
    """Past an OSC-like string starting at ``text[j]``: after its BEL or ESC \\. One left
    unterminated ends at the end of its row, so a broken title cannot swallow the transcript."""
    n = len(text)
    while j < n:
        ch = text[j]
        if ch in ("\x07", "\x9c"):
            return j + 1
        if ch == ESC and j + 1 < n and text[j + 1] == "\\":
            return j + 2
        if ch == "\n":
            return j
        j += 1
    return n
