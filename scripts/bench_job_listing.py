#!/usr/bin/env python3
"""The SQLite job queue's listing of a profile's failed jobs, before and after issue 34's
eighth step, side by side on one queue: `python3 scripts/bench_job_listing.py [JOBS]`.

The queue holds JOBS done jobs over ten profiles (one of them failed), built from the
adapter's own migrations; each statement lists the failed jobs of one profile, as recall's
check for failed ingests does, 50 times.
"""

import pathlib
import sqlite3
import sys
import time

MIGRATIONS = pathlib.Path(__file__).resolve().parent.parent / "adapters/sqlite/migrations"

BEFORE = (
    "SELECT * FROM job_queue WHERE seq > ?1 AND (?2 IS NULL OR profile = ?2) "
    "AND (?3 IS NULL OR kind = ?3) AND (?4 IS NULL OR state = ?4) ORDER BY seq LIMIT ?5"
)
AFTER = (
    "SELECT * FROM job_queue WHERE seq > ? AND profile = ? AND kind = ? AND state = ? "
    "ORDER BY seq LIMIT ?"
)


def queue(jobs: int) -> sqlite3.Connection:
    """An in-memory queue of `jobs` jobs with the job queue's tables and indexes."""
    db = sqlite3.connect(":memory:")
    schema = (MIGRATIONS / "0005_text_fields_job_queue.sql").read_text()
    db.executescript(schema[schema.index("CREATE TABLE job_queue") :])
    db.executescript((MIGRATIONS / "0012_job_queue_profile_state.sql").read_text())
    db.executemany(
        "INSERT INTO job_queue (id, kind, profile, state, stage, body, created_at, updated_at) "
        "VALUES (?, 'ingest', ?, ?, 'done', '{}', 0, 0)",
        (
            (f"j{i}", f"p{i % 10}", "failed" if i == jobs - 10 else "done")
            for i in range(jobs)
        ),
    )
    return db


def main() -> None:
    jobs = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    db = queue(jobs)
    for name, sql in (("before", BEFORE), ("after", AFTER)):
        found = db.execute(sql, (0, "p0", "ingest", "failed", 6)).fetchall()
        started = time.perf_counter()
        for _ in range(50):
            db.execute(sql, (0, "p0", "ingest", "failed", 6)).fetchall()
        per = (time.perf_counter() - started) / 50 * 1000
        print(f"{name}: {len(found)} failed job(s), {per:.3f} ms per listing ({jobs} jobs)")


if __name__ == "__main__":
    main()
