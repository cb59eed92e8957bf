"""Alt text: each registered platform holds its limit (X 1,000; LinkedIn 250, a setting). Both are
counted in UTF-16 units, the larger of the plausible counts, so a text that passes here is not
cut there.
"""

from __future__ import annotations

from engine.platforms import registry
from engine.platforms.linkedin import utf16_length
from engine.platforms.rules import Count, Violation


def alt_text_limit(platform: str, limit: int | None = None) -> int:
    """The registered platform's limit (engine.platforms.registry), or ``limit`` when given."""
    cap = registry.get(platform).alt_limit
    return cap if limit is None else limit


def alt_text_count(text: str, *, platform: str, limit: int | None = None) -> Count:
    """The alt text's length against the platform's limit."""
    cap = alt_text_limit(platform, limit)
    length = utf16_length(text.strip())
    return Count(f"alt text ({platform})", length, cap, 0 < length <= cap)


def check_alt_text(
    text: str, *, platform: str, limit: int | None = None, draft: str = "alt text"
) -> list[Violation]:
    """Broken rules for one image's alt text: it must say something and fit the platform."""
    cap = alt_text_limit(platform, limit)
    length = utf16_length(text.strip())
    if length == 0:
        return [Violation(draft, None, "alt text", "empty; describe what the image shows")]
    if length > cap:
        return [
            Violation(
                draft, None, "alt text", f"{length}/{cap} characters on {platform}, {length - cap} over"
            )
        ]
    return []
