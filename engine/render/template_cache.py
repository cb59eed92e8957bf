"""Compiled templates kept in memory, by the exact text they were compiled from.

Why: Jinja compiles a template to Python each time a new Environment loads it, and the build
makes new environments for every day (drafts, then the review page twice). Compiling is most of
a draft's cost. Jinja checks the source's checksum before using what is kept here, so an edited
template is always compiled afresh; nothing is written to disk and a new process starts empty.
"""

from __future__ import annotations

import jinja2


class MemoryBytecodeCache(jinja2.BytecodeCache):
    """jinja2.BytecodeCache over a dict of this process. Jinja's key holds the template's name
    and file but not the environment's options (autoescape, trim_blocks, ...), which the code
    depends on: so one cache per kind of environment, never shared between two."""

    def __init__(self) -> None:
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = self._code.get(bucket.key)
        if data is not None:
            bucket.bytecode_from_string(data)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[bucket.key] = bucket.bytecode_to_string()

    def clear(self) -> None:
        self._code.clear()


DRAFTS = MemoryBytecodeCache()  # engine.render.posts.environment
REVIEW = MemoryBytecodeCache()  # engine.render.review's pages
