"""The Alembic revisions of the run store's schema, one module each (see ``judge.migrations``)."""

__all__: list[str] = []
