"""Threads that split themselves: a thread's rendered draft cut into posts that fit.

A template writes paragraphs and the platform decides where posts end, so a figure that grows
by a digit moves a paragraph to the next post instead of failing the build. Lines '---' stay
hard breaks: what an author put in a post of its own is never merged with its neighbours.
Inside each stretch between them, whole paragraphs are packed greedily; a paragraph too long
for a post of its own is cut between sentences (or lines), and a sentence too long between
words. A word is never cut: one that cannot fit is a post by itself, and the platform's check
names it. An image line (a Markdown image: an attachment, not text) stays with the paragraph
before it, and no post gets more images than the platform takes.

Each candidate is measured as it will be posted: with the 'k/n ' label the build puts in front
(engine.platforms.thread.label) and without its images, by the platform's own count. The label
is wider when n is, and n is what the packing finds, so the packing is repeated with the total
it found until the two agree.

A stretch that fits in one post is returned exactly as written: a thread split by hand that
already fits comes out byte for byte as it did before threads split themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from engine.platforms.thread import images_in, label, post_text, split_thread


@dataclass(frozen=True)
class PostLimits:
    """What one post of a platform's thread may hold."""

    length: Callable[[str], int]  # the platform's own count of a post's text (X: weighted length)
    limit: int  # the most that count may be, the 'k/n ' label included
    images: int | None = None  # the most images one post may attach; None: no limit


# A word, as the splitter cuts: a run of non-space characters, where a Markdown image (whose alt
# text may hold spaces) counts as non-space, so no cut ever falls inside an image's brackets.
_WORD = re.compile(r"(?:!\[[^\]\n]*\]\([^)\s]*\)|\S)+")
# A sentence ends at a word ending in . ! ? or …, closing quotes and brackets allowed after it.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*$")

# How strong the break between two words is: the splitter cuts at the strongest it can, and
# never at 0 (before an image, which stays with its words).
_PARAGRAPH, _SENTENCE, _WORD_BREAK = 3, 2, 1
# The packing depends on n only through the label's width, which changes at 10, 100, …: a few
# rounds settle any real thread; the bound only keeps a strange length function from looping.
_ROUNDS = 8


def reflow(text: str, limits: PostLimits) -> list[str]:
    """The posts of a thread's rendered draft, unlabelled, each fitting ``limits`` once its
    'k/n ' label is put in front (n = the number of posts returned).

    Empty stretches between '---' lines are dropped, as the numbering drops them. If a round
    finds fewer posts than it assumed, its posts are kept: each was measured with a label at
    least as wide as the one it gets. A word too long for any post is returned as a post of its
    own, over the limit, for the platform's check to name.
    """
    segments = [segment for segment in split_thread(text) if segment.strip()]
    assumed = max(len(segments), 1)
    posts = _pack(segments, limits, assumed)
    for _ in range(_ROUNDS):
        if len(posts) <= assumed:
            break
        assumed = len(posts)
        posts = _pack(segments, limits, assumed)
    return posts


def _pack(segments: list[str], limits: PostLimits, total: int) -> list[str]:
    """Every segment packed, for a thread assumed to have ``total`` posts."""
    packer = _Packer(limits, total)
    for segment in segments:
        packer.segment(segment)
    return packer.posts


class _Packer:
    """Greedy packing of one thread, post by post: the next post's number is always known."""

    def __init__(self, limits: PostLimits, total: int) -> None:
        self.limits = limits
        self.total = total
        self.posts: list[str] = []

    def fits(self, text: str) -> bool:
        """Whether ``text`` fits as the next post, label included and images left out."""
        cap = self.limits.images
        if cap is not None and images_in(text) > cap:
            return False
        labelled = label(len(self.posts) + 1, self.total) + text
        return self.limits.length(post_text(labelled)) <= self.limits.limit

    def segment(self, text: str) -> None:
        if self.fits(text):
            self.posts.append(text)  # as written, to the byte
            return
        _Segment(self, text).pack(0, None, _PARAGRAPH)


class _Segment:
    """One stretch between '---' lines, as words (spans of its text) and the breaks between them.

    A post is always one contiguous piece of the text, from its first word to its last, so what
    lies between them (a blank line between paragraphs, a line break, a space) is kept as it was.
    """

    def __init__(self, packer: _Packer, text: str) -> None:
        self.packer = packer
        self.text = text
        self.words = [m.span() for m in _WORD.finditer(text)]
        # breaks[i]: the break between word i and word i + 1.
        self.breaks = [self._strength(i) for i in range(len(self.words) - 1)]
        self._glue_images()

    def _strength(self, i: int) -> int:
        gap = self.text[self.words[i][1] : self.words[i + 1][0]]
        if gap.count("\n") >= 2:
            return _PARAGRAPH
        word = self.text[slice(*self.words[i])]
        if "\n" in gap or _SENTENCE_END.search(word):
            return _SENTENCE
        return _WORD_BREAK

    def _glue_images(self) -> None:
        """No cut before an image: it goes with the words before it (with the words after it
        when none are before), up to the most images a post takes; past that, the next image
        may start a post of its own."""
        cap = self.packer.limits.images
        held = 0  # images held by the word the current run of images is glued to
        text_seen = False
        for i, span in enumerate(self.words):
            word = self.text[slice(*span)]
            images, is_text = images_in(word), bool(post_text(word).strip())
            if i > 0 and (not is_text or not text_seen) and (cap is None or held + images <= cap):
                self.breaks[i - 1] = 0
                held += images
            else:
                held = images
            text_seen = text_seen or is_text

    def piece(self, start: int, end: int) -> str:
        """Words start..end-1, with what lies between them."""
        return self.text[self.words[start][0] : self.words[end - 1][1]]

    def units(self, start: int, end: int, level: int) -> list[tuple[int, int]]:
        """Words start..end-1 cut at every break of ``level`` or stronger."""
        units: list[tuple[int, int]] = []
        first = start
        for i in range(start, end - 1):
            if self.breaks[i] >= level:
                units.append((first, i + 1))
                first = i + 1
        units.append((first, end))
        return units

    def pack(self, start: int, end: int | None, level: int) -> None:
        """Greedy: each unit joins the open post if the two fit together; a unit too long for
        a post of its own is packed a level down, in posts of its own."""
        packer = self.packer
        end = len(self.words) if end is None else end
        open_post: tuple[int, int] | None = None
        for unit in self.units(start, end, level):
            if open_post is not None and packer.fits(self.piece(open_post[0], unit[1])):
                open_post = (open_post[0], unit[1])
                continue
            if open_post is not None:
                packer.posts.append(self.piece(*open_post))
                open_post = None
            if level == _WORD_BREAK or packer.fits(self.piece(*unit)):
                open_post = unit  # a word is never cut, even one too long to fit
            else:
                self.pack(unit[0], unit[1], level - 1)
        if open_post is not None:
            packer.posts.append(self.piece(*open_post))
