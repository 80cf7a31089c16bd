"""The run store's schema, its version, and the migrations from one version to the next.

Every change to the tables is a new entry in :data:`MIGRATIONS` (never an edit of an old one), so
a store written by any earlier release is brought up to date when it is opened, and a store
written by a newer release is refused with a clear error instead of being damaged.
"""

from __future__ import annotations

__all__ = ["APPLICATION", "MIGRATIONS", "SCHEMA_VERSION"]

#: Written into the store's ``meta`` table; a database without it is not a run store.
APPLICATION = "anvia_notebook"

#: ``(version, statements)``: applying every entry above the store's version, in order, in one
#: transaction, brings it to :data:`SCHEMA_VERSION`. The SQL is portable between SQLite and
#: PostgreSQL.
MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            """CREATE TABLE runs (
                run_id TEXT PRIMARY KEY,
                agent_id TEXT NOT NULL,
                session_id TEXT,
                status TEXT NOT NULL,
                prompt TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL,
                owner_host TEXT,
                owner_pid INTEGER,
                owner_started TEXT,
                heartbeat_at DOUBLE PRECISION,
                state TEXT NOT NULL
            )""",
            "CREATE INDEX runs_by_update ON runs (updated_at)",
            """CREATE TABLE interactions (
                id TEXT PRIMARY KEY,
                run_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                status TEXT NOT NULL,
                record TEXT NOT NULL,
                decision TEXT,
                updated_at TEXT NOT NULL
            )""",
            "CREATE INDEX interactions_by_run ON interactions (run_id, status)",
            """CREATE TABLE messages (
                run_id TEXT NOT NULL,
                idx INTEGER NOT NULL,
                message TEXT NOT NULL,
                PRIMARY KEY (run_id, idx)
            )""",
            """CREATE TABLE events (
                run_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                event TEXT NOT NULL,
                PRIMARY KEY (run_id, seq)
            )""",
            """CREATE TABLE studio_sessions (
                session_id TEXT PRIMARY KEY,
                agent_id TEXT NOT NULL,
                title TEXT NOT NULL,
                messages TEXT NOT NULL,
                created_at TEXT NOT NULL,
                updated_at TEXT NOT NULL
            )""",
        ],
    ),
    (
        2,
        [
            # A run's trace: one row for the run, one per model call, one per tool call.
            """CREATE TABLE trace_entries (
                run_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                idx INTEGER NOT NULL,
                entry TEXT NOT NULL,
                PRIMARY KEY (run_id, kind, idx)
            )""",
        ],
    ),
    (
        3,
        [
            # The messages of a run written since its last full write, as one JSON object
            # ``{"from": index, "messages": [...]}``, so that the write before each tool call is
            # one row (they move to ``messages`` with the next full write). A row of ``events``
            # may now hold a JSON array of consecutive events from its ``seq`` on.
            "ALTER TABLE runs ADD COLUMN recent_messages TEXT",
            # Runs are listed by creation, never looked up by their last change: an index on
            # ``updated_at`` cost a page at every write of a run and served no query.
            "DROP INDEX runs_by_update",
            "CREATE INDEX runs_by_creation ON runs (created_at)",
        ],
    ),
    (
        4,
        [
            # Text streamed into an event already stored (a growing text_delta, reasoning_delta
            # or tool_call_delta): each write adds the new text from character ``offset`` on,
            # instead of writing the whole event again (a long answer was rewritten at each
            # write). Read: appended to the event at ``seq``, in ``offset`` order.
            """CREATE TABLE event_parts (
                run_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                offset_chars INTEGER NOT NULL,
                text TEXT NOT NULL,
                PRIMARY KEY (run_id, seq, offset_chars)
            )""",
        ],
    ),
    (
        5,
        [
            # The JSON Schema of the tool's input, so that edited arguments sent from any
            # process are checked before they are recorded.
            "ALTER TABLE interactions ADD COLUMN args_schema TEXT",
        ],
    ),
    (
        6,
        [
            # A sub-agent's run (agent.as_tool) names the run that called it: runs() lists it
            # under its parent, and the top-level run's pending interactions include its.
            "ALTER TABLE runs ADD COLUMN parent_run_id TEXT",
            "CREATE INDEX runs_by_parent ON runs (parent_run_id)",
            # Messages steered into a run from any process (``RunStore.steer``, the command
            # line), in order (``seq``): ``queued`` until the run has taken it into its state,
            # then ``taken``.
            """CREATE TABLE steering (
                id TEXT PRIMARY KEY,
                run_id TEXT NOT NULL,
                seq INTEGER NOT NULL,
                message TEXT NOT NULL,
                status TEXT NOT NULL,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX steering_by_run ON steering (run_id, status)",
            # Set when the run has decided to end: a message steered after that is refused.
            "ALTER TABLE runs ADD COLUMN steering_closed INTEGER",
        ],
    ),
    (
        7,
        [
            # An approval with edited arguments decided in another process while the run's
            # process is alive: sent to that process, which checks it with the tool's own model
            # and claims it or refuses it (``store/_confirm.py``). ``decision``: the approval as
            # JSON; ``status``: ``queued``, ``taken`` (by the run's process), ``done`` (decided
            # there), ``refused`` (``answer``: the run's words) or ``withdrawn`` (by the sender,
            # which gave up waiting).
            """CREATE TABLE decision_requests (
                id TEXT PRIMARY KEY,
                interaction_id TEXT NOT NULL,
                decision TEXT NOT NULL,
                status TEXT NOT NULL,
                answer TEXT,
                created_at TEXT NOT NULL
            )""",
            "CREATE INDEX decision_requests_by_interaction ON decision_requests "
            "(interaction_id, status)",
        ],
    ),
    (
        8,
        [
            # A sub-agent's run: the internal id of the parent's call that runs it (the latest,
            # once resumed), for runs(). A row written before has it in its state only.
            "ALTER TABLE runs ADD COLUMN parent_call_id TEXT",
        ],
    ),
]

SCHEMA_VERSION = MIGRATIONS[-1][0]
