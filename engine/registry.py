"""One registry type for every axis the engine is extended along: sections, charts, platforms
and batching policies.

Each axis keeps one ``Registry`` of its own kind of registration, and the same three rules hold
for all of them, so a newcomer learns them once:

- **Registering.** A kind registers itself in its own module, at import, with
  ``REGISTRY.add(item)`` (or a decorator built on it). Nothing central lists the kinds.
- **Duplicates.** A second registration under a taken name is refused, naming both modules,
  so two plug-ins can never silently answer to one name. The same module registering again
  (it was reloaded) replaces its own entry.
- **Discovery.** The first look-up imports every module of the axis's package once, in sorted
  order, so every built-in kind has registered before anyone reads the table; a kind a test
  registers from its own file joins the same table.

``generation`` changes whenever the table does, so anything built from it (the spec's model,
which has one field per section) can tell that it must be rebuilt.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class DuplicateRegistration(ValueError):
    """Two modules registered the same name on one axis."""


class Registry(Generic[T]):
    """The registrations of one axis, by name; see the module docstring for the rules.

    ``kind`` names the axis in messages ("chart", "platform"); ``package`` is the package whose
    modules register the built-in kinds; ``name_of`` reads a registration's name and ``order_of``
    its place in every listing (ties broken by name)."""

    def __init__(
        self,
        kind: str,
        package: str,
        *,
        name_of: Callable[[T], str],
        order_of: Callable[[T], Any] = lambda item: 0,
    ) -> None:
        self.kind = kind
        self.package = package
        self._name_of = name_of
        self._order_of = order_of
        self._items: dict[str, T] = {}
        self._origins: dict[str, str] = {}
        self._loaded = False
        self.generation = 0

    # ---- registering ----------------------------------------------------------------------

    def add(self, item: T, *, origin: str | None = None) -> T:
        """Register ``item`` under its name and return it, so a module can keep a handle.

        ``origin`` is the registering module's name, read off the caller when not given."""
        name = self._name_of(item)
        module = origin or _caller_module()
        taken = self._origins.get(name)
        if taken is not None and taken != module:
            raise DuplicateRegistration(
                f"{self.kind} {name!r} is registered twice: by {taken} and by {module}"
            )
        self._items[name] = item
        self._origins[name] = module
        self.generation += 1
        return item

    def remove(self, name: str) -> None:
        """Take a registration out (a test that registered a toy kind cleans up after itself)."""
        if self._items.pop(name, None) is not None:
            del self._origins[name]
            self.generation += 1

    # ---- reading --------------------------------------------------------------------------

    def get(self, name: str) -> T:
        """The registration called ``name``; a KeyError naming the known ones otherwise."""
        self.load()
        try:
            return self._items[name]
        except KeyError:
            raise KeyError(f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None

    def find(self, name: str) -> T | None:
        self.load()
        return self._items.get(name)

    def all(self) -> list[T]:
        """Every registration, in listing order."""
        self.load()
        return sorted(self._items.values(), key=lambda item: (self._order_of(item), self._name_of(item)))

    def names(self) -> list[str]:
        return [self._name_of(item) for item in self.all()]

    def items(self) -> list[tuple[str, T]]:
        return [(self._name_of(item), item) for item in self.all()]

    def origin(self, name: str) -> str:
        """The module that registered ``name``."""
        self.load()
        return self._origins[name]

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items

    def __getitem__(self, name: str) -> T:
        return self.get(name)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        self.load()
        return len(self._items)

    # ---- discovery ------------------------------------------------------------------------

    def load(self) -> None:
        """Import every module of the package once, in sorted order, so the built-in kinds
        have registered. Marked done first: a module that reads the registry while it is being
        imported sees what has registered so far instead of starting discovery again."""
        if self._loaded:
            return
        self._loaded = True
        package = importlib.import_module(self.package)
        for name in sorted(info.name for info in pkgutil.iter_modules(package.__path__)):
            importlib.import_module(f"{self.package}.{name}")


def _caller_module() -> str:
    """The module that called ``Registry.add`` (or the registering helper one frame above it,
    when that helper lives beside a registry in engine/)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").endswith(
        (".registry", "engine.sections")
    ):
        frame = frame.f_back  # type: ignore[assignment]
    return frame.f_globals.get("__name__", "?") if frame is not None else "?"
