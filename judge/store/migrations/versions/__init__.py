"""The Alembic revisions of the run store's schema, one module each (``judge.store.migrations``)."""

__all__: list[str] = []
