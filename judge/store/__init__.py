"""The run store: runs and case results in SQL, read and migrated.

SQLAlchemy Core for reads and writes, row seals, schema revisions and migrations
(Alembic), provider batch jobs, the review page's labels.

Layer: adapter. May import: ``judge.core``, ``judge.system``.

Modules: ``batch_jobs``, ``labels``, ``runs``, ``seal``, ``migrations``. This
``__init__`` imports nothing: import from the module.
"""

__all__: list[str] = []
