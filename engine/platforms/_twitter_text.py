"""Import ``twitter-text-parser`` despite its ``pkg_resources`` import.

twitter-text-parser 3.0.0 reads its bundled ``emoji-test.txt`` with
``pkg_resources.resource_string`` (in ``twitter_text/regexp/emoji.py``). setuptools ≥ 82 no
longer ships ``pkg_resources``, so a plain ``import twitter_text`` fails. Rather than pin an old
setuptools, this module lends the library the one function it calls, built on
``importlib.resources``, for the duration of the import only:

- only when no real ``pkg_resources`` can be imported (a real one is always preferred);
- the stand-in exposes ``resource_string`` and nothing else, so any other use fails loudly;
- it is removed from ``sys.modules`` again once the library is loaded, so no other code can
  mistake it for the real thing.

Everything the rest of engine.platforms needs from the library is re-exported here, so this is
the one place that knows about the work-around.
"""
from __future__ import annotations

import importlib
import importlib.resources
import sys
import types


def _resource_string(module_name: str, resource: str) -> bytes:
    """``pkg_resources.resource_string``: the bytes of a file that sits beside a module."""
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    is_package = getattr(module, "__path__", None) is not None
    anchor = module_name if is_package else module_name.rpartition(".")[0]
    return importlib.resources.files(anchor).joinpath(resource).read_bytes()


def _import_twitter_text() -> types.ModuleType:
    try:
        importlib.import_module("pkg_resources")
    except ImportError:
        pass
    else:
        return importlib.import_module("twitter_text")
    stand_in = types.ModuleType("pkg_resources", "stand-in: resource_string only (engine.platforms)")
    stand_in.resource_string = _resource_string  # type: ignore[attr-defined]
    sys.modules["pkg_resources"] = stand_in
    try:
        return importlib.import_module("twitter_text")
    finally:
        if sys.modules.get("pkg_resources") is stand_in:
            del sys.modules["pkg_resources"]


twitter_text = _import_twitter_text()

from twitter_text.config import config as _config  # noqa: E402
from twitter_text.extract_urls import extract_urls_with_indices  # noqa: E402
from twitter_text.parse_tweet import parse_tweet  # noqa: E402
from twitter_text.regexp.emoji import emoji as library_emoji  # noqa: E402
from twitter_text.regexp.invalid_chars import invalid_chars  # noqa: E402

#: The v3 configuration (280, scale 100, default weight 200, URLs 23, emoji parsing on).
V3 = _config["version3"]

__all__ = ["V3", "extract_urls_with_indices", "invalid_chars", "library_emoji", "parse_tweet"]
