r"""Text made safe to show on a terminal: invisible and direction-changing characters escaped.

``judge render`` prints the exact prompt a judge receives, and that prompt quotes case text.
A right-to-left override (U+202E) or a zero-width space in an evidence excerpt would make the
terminal show something other than what is sent (reordered, hidden or joined text), so
every control, format (bidi overrides and isolates, zero-width characters, the BOM...), line
or paragraph separator, surrogate, private-use or unassigned character is written as a
visible escape: ``\u202e``. Newlines and tabs stay. The escapes are JSON's (astral
characters as a surrogate pair), so JSON text stays valid and decodes to the same data.
Plain text that already contains a literal ``\u202e`` reads the same: the cost of keeping
every other backslash as written.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["visible"]

# Printable ASCII, newline and tab pass without a look-up; anything else is checked.
_SUSPECT = re.compile(r"[^\t\n\x20-\x7e]")
_HIDDEN = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if unicodedata.category(char) not in _HIDDEN:
        return char
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible(text: str) -> str:
    r"""``text`` with every invisible or direction-changing character as a ``\uXXXX`` escape."""
    return _SUSPECT.sub(_escape, text)
