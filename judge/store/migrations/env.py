"""Alembic's environment for the run store: it migrates the connection the store hands over.

Alembic runs this file itself, for ``command.upgrade`` and ``command.stamp``
(:func:`judge.store.migrations.upgrade` puts the connection in the config's attributes);
imported as a module it does nothing.
"""

from __future__ import annotations

from alembic import context

__all__ = ["run_migrations"]


def run_migrations() -> None:
    """Run the command's migrations (or stamp) on the given connection, in its transaction.

    The caller's transaction is already open (it holds the write lock): Alembic sees it
    and begins none of its own, so the whole upgrade commits or rolls back with the caller.
    """
    context.configure(connection=context.config.attributes["connection"], target_metadata=None)
    with context.begin_transaction():
        context.run_migrations()


if __name__ != "judge.store.migrations.env":  # Alembic loads this file under its own name
    run_migrations()
