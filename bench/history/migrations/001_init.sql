-- One row per run of a results set: what was run, where the code came
-- from, and the run's summary as results.json holds it.
CREATE TABLE runs (
    id {{ID}},
    recorded_at TEXT NOT NULL,
    started_at TEXT NOT NULL,
    source TEXT NOT NULL,
    run_name TEXT NOT NULL,
    workload_fp TEXT NOT NULL,
    server_fp TEXT NOT NULL,
    commit_sha TEXT NOT NULL,
    branch TEXT NOT NULL,
    ci_run_id TEXT NOT NULL,
    ci_url TEXT NOT NULL,
    build_source TEXT NOT NULL,
    tool TEXT NOT NULL,
    server_version TEXT NOT NULL,
    server_command TEXT NOT NULL,
    server_preset TEXT NOT NULL,
    model TEXT NOT NULL,
    bundled TEXT NOT NULL,
    machine TEXT NOT NULL,
    workload TEXT NOT NULL,
    summary TEXT NOT NULL,
    gate TEXT NOT NULL
);
CREATE INDEX runs_series ON runs (workload_fp, server_fp, started_at);

-- One row per label of a run (--label KEY=VALUE).
CREATE TABLE labels (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);

-- The run-level statistics: one row per quantity and statistic, e.g.
-- client.e2e / median.
CREATE TABLE stats (
    run_id BIGINT NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    quantity TEXT NOT NULL,
    stat TEXT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, quantity, stat)
);
