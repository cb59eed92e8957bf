"""Compiled templates kept by the exact text they were compiled from: in memory, and on disk in
the engine's cache folder (engine.cachedir), so a new process does not compile them again.

Why: Jinja compiles a template to Python each time a new Environment loads it, and compiling is
most of a draft's cost: a quarter of a warm build's, which draws nothing and compiles every
draft and both review pages. Jinja's own bytecode cache does the bookkeeping: each entry holds
the checksum of the source it came from and Jinja's magic (its version and Python's), and an
edited template is compiled afresh.

What Jinja's key leaves out is kept in the folder's name: the kind of environment (drafts and the
review page compile with different options) and a digest of the code that shapes what is
compiled (the sandbox, which puts its step and size budget into every template, and this
module), so code from an older engine, without a newer check, is never run. A cache entry that
cannot be read, or reads as damaged, is compiled again; one that cannot be written is only a
slower next build.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import sys
from pathlib import Path

import jinja2

from engine import cachedir
from engine.errors import UserError
from engine.limits import MIB, read_bytes_limited
from engine.outdir import atomic

MAX_ENTRY_BYTES = 4 * MIB  # a compiled draft is tens of KiB; the review page about 200 KiB
_SHAPERS = (Path(__file__).with_name("render_env.py"), Path(__file__))


@functools.cache
def code_digest() -> str:
    """The sandbox's code, this module's, Jinja's version and Python's, as one digest."""
    digest = hashlib.sha256(f"jinja2=={jinja2.__version__}\0{sys.version}\0".encode())
    for path in _SHAPERS:
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:20]


class KeptBytecodeCache(jinja2.BytecodeCache):
    """Jinja's BytecodeCache over a dict of this process, backed by files in the cache folder.
    One per kind of environment, never shared between two (see the module's docstring)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._code: dict[str, bytes] = {}
        self._pruned = False

    def folder(self) -> Path:
        return cachedir.root() / "templates" / f"{self.kind}-{code_digest()}"

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = self._code.get(bucket.key)
        if data is None:
            try:
                data = read_bytes_limited(self.folder() / bucket.key, MAX_ENTRY_BYTES, "compiled template")
            except (UserError, cachedir.NoCacheFolder):  # absent, not a plain file or too big: compiled again
                return
        try:
            bucket.bytecode_from_string(data)  # Jinja resets the bucket on another checksum or magic
        except Exception:  # marshal's errors on a damaged entry: any of several kinds
            bucket.reset()
            return
        self._code[bucket.key] = data

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        data = bucket.bytecode_to_string()
        self._code[bucket.key] = data
        try:
            self._prune()
            self.folder().mkdir(parents=True, exist_ok=True)
            atomic.write_bytes(self.folder() / bucket.key, data, what="compiled template", durable=False)
        except (OSError, UserError):
            pass

    def clear(self) -> None:
        self._code.clear()

    def _prune(self) -> None:
        """Bounded: the folders of this kind from other versions of the code go, once a process,
        so the cache holds one compiled copy of each template a kind renders."""
        if self._pruned:
            return
        self._pruned = True
        for old in self.folder().parent.glob(f"{self.kind}-*"):
            if old != self.folder():
                shutil.rmtree(old, ignore_errors=True)


DRAFTS = KeptBytecodeCache("drafts")  # engine.render.posts.environment
REVIEW = KeptBytecodeCache("review")  # engine.render.review's pages


def clear() -> Path | None:
    """Empty the compiled templates of every kind and engine version (`make clean-cache`);
    returns the folder, or None where there is no cache folder."""
    for cache in (DRAFTS, REVIEW):
        cache.clear()
    try:
        folder = cachedir.root() / "templates"
    except cachedir.NoCacheFolder:
        return None
    shutil.rmtree(folder, ignore_errors=True)
    return folder
