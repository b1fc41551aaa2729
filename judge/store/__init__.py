"""The run store: runs and case results in SQL, read and migrated.

SQLAlchemy Core for writes, the light reader for ``history``/``show``, schema revisions
and migrations (Alembic), provider batch jobs.

Layer: adapter. May import: ``judge.core``, ``judge.system``.

Modules: ``batch_jobs``, ``libpq``, ``reader``, ``revisions``, ``runs``, ``migrations``. This
``__init__`` imports nothing: import from the module.
"""

__all__: list[str] = []
