"""What names a run store: a file path or a ``postgresql://`` address (no other import here:
the command line reads it without loading the store)."""

from __future__ import annotations

import re

__all__ = ["is_postgres_address", "location_problem", "postgres_address"]

#: Connection keywords of PostgreSQL's ``key=value`` form (``host=db dbname=runs``), which would
#: otherwise become a SQLite file of that name.
_POSTGRES_KEYWORDS = re.compile(
    r"(?:^|\s)(?:host|hostaddr|port|dbname|user|password|passfile|service|sslmode)\s*=", re.I
)


#: The schemes of a PostgreSQL address, any case (libpq takes them in lower case only).
_POSTGRES_SCHEME = re.compile(r"(postgres(?:ql)?)://", re.I)


def is_postgres_address(location: object) -> bool:
    """Whether ``location`` is a ``postgresql://`` (or ``postgres://``) address, in any case:
    ``PostgreSQL://...`` is one too (it made a folder named ``PostgreSQL:`` holding a SQLite
    file named after the password)."""
    return isinstance(location, str) and _POSTGRES_SCHEME.match(location) is not None


def postgres_address(location: str) -> str:
    """``location`` with its scheme in lower case, as libpq reads it."""
    return _POSTGRES_SCHEME.sub(lambda scheme: scheme[0].lower(), location, count=1)


def location_problem(location: str) -> str | None:
    """Why ``location`` (a text) names no run store, or None: it is blank, or an address of
    another kind than ``postgresql://`` (``sqlite:///runs.db``, which would otherwise become a
    folder named ``sqlite:``). Package-internal: the command line checks with it too."""
    if not location.strip():
        return "A run store needs a location: a file path or a postgresql:// address."
    scheme = re.match(r"([A-Za-z][A-Za-z0-9+.-]+)://", location)
    if scheme is not None and scheme[1].lower() not in ("postgresql", "postgres"):
        return (
            f"A run store is a file path or a postgresql:// address, not a {scheme[1]}:// "
            "address: for SQLite, give the file's path (e.g. runs.sqlite)."
        )
    if scheme is None and _POSTGRES_KEYWORDS.search(location):
        return (
            "A run store is a file path or a postgresql:// address: PostgreSQL's connection "
            "keywords (host=... dbname=...) are not taken; write them as an address, "
            "postgresql://USER:PASSWORD@HOST:PORT/DBNAME."
        )
    return None
