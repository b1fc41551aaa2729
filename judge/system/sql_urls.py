"""Database URLs: one resolver for the run store and the shared cache tier, and how one is shown.

Decisions:

- A relative SQLite path is the workspace's (``sqlite:///.judge/runs.sqlite`` is the same file
  from any folder a command runs in), made absolute. Resolving makes nothing: a writer makes
  the file's folder (:meth:`SqlUrl.make_folder`), so a fresh workspace needs no ``mkdir``
  first, and a command that only reads leaves a folder with no store as it found it.
  In-memory databases and SQLite URIs (``file:…``, ``?uri=true``) are left as written.
- What is shown of a URL never holds its password: :attr:`SqlUrl.shown` (in messages, repr,
  ``judge workspace config``) and :meth:`SqlUrl.scrub` (a driver's message, which may quote it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from sqlalchemy.engine import URL, make_url

from ..core.text.secrets import MASK, mask_url

__all__ = ["SqlUrl", "resolve_sql_url"]


@dataclass(frozen=True)
class SqlUrl:
    """A parsed database URL, resolved against a workspace, and its shown form."""

    url: URL
    """What the engine is created from (password included)."""
    shown: str
    """The URL with its password masked."""
    password: str | None = field(default=None, repr=False)
    file: Path | None = None
    """The local SQLite file, absolute (None: a server, in memory, or a SQLite URI)."""

    @property
    def backend(self) -> str:
        """The database kind: ``sqlite``, ``postgresql``."""
        return self.url.get_backend_name()

    @property
    def server(self) -> bool:
        """A database server (not a SQLite file)."""
        return self.backend != "sqlite"

    def make_folder(self) -> None:
        """Make the local file's folder (and its parents) if missing; OSError when it cannot."""
        if self.file is not None:
            self.file.parent.mkdir(parents=True, exist_ok=True)

    def scrub(self, message: str) -> str:
        """``message`` (a driver's, say) with this URL's password and any URL's masked."""
        text = mask_url(message)
        return text.replace(self.password, MASK) if self.password else text


def _local_file(url: URL) -> bool:
    database = url.database
    return url.get_backend_name() == "sqlite" and bool(database) and database != ":memory:" \
        and not str(database).startswith("file:") and not url.query.get("uri")


def resolve_sql_url(url: str, workspace: Path) -> SqlUrl:
    """Parse ``url``; a relative SQLite path becomes ``workspace``'s (nothing is made).

    Raises what SQLAlchemy raises for a URL it cannot parse (``ArgumentError``).
    """
    parsed = make_url(url)
    path = None
    if _local_file(parsed):
        path = Path(str(parsed.database)).expanduser()
        if not path.is_absolute():
            path = (workspace / path).absolute()
        parsed = parsed.set(database=str(path))
    shown = parsed.render_as_string(hide_password=True).replace(":***@", f":{MASK}@")
    password = None if parsed.password is None else str(parsed.password)
    return SqlUrl(url=parsed, shown=shown, password=password, file=path)
