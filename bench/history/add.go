package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// timeLayout keeps times sortable as text: fixed width, UTC.
const timeLayout = "2006-01-02T15:04:05.000000000Z"

func timeText(t time.Time) string { return t.UTC().Format(timeLayout) }

func nowText() string { return timeText(time.Now()) }

// Add stores entries in one transaction and sets their ID and RecordedAt:
// all of them or, on an error, none. Several processes may Add to one
// database at once; each waits for the other's transaction.
func (s *Store) Add(ctx context.Context, entries []Entry) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("history %s: %w", s.name, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	now := time.Now().UTC()
	for i := range entries {
		id, err := s.insert(ctx, tx, &entries[i], now)
		if err != nil {
			return fmt.Errorf("history %s: run %s of %s: %w", s.name, entries[i].Run, entries[i].Source, err)
		}
		entries[i].ID, entries[i].RecordedAt = id, now
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("history %s: %w", s.name, err)
	}
	return nil
}

func (s *Store) insert(ctx context.Context, tx *sql.Tx, e *Entry, now time.Time) (int64, error) {
	js := func(v any) string {
		data, _ := json.Marshal(v) // result types: cannot fail
		return string(data)
	}
	bundled := ""
	if e.Bundled != nil {
		bundled = js(e.Bundled)
	}
	cols := []string{"recorded_at", "started_at", "source", "run_name", "workload_fp", "server_fp",
		"commit_sha", "branch", "ci_run_id", "ci_url", "build_source", "tool", "server_version",
		"server_command", "server_preset", "model", "bundled", "machine", "workload", "summary", "gate"}
	vals := []any{timeText(now), timeText(e.StartedAt), e.Source, e.Run, e.WorkloadFP, e.ServerFP,
		e.Build.Commit, e.Build.Branch, e.Build.CIRunID, e.Build.CIURL, e.Build.Source, e.Tool, e.ServerVersion,
		e.ServerCommand, e.Preset, e.Model, bundled, js(e.Machine), js(e.Workload), js(e.Summary), e.Gate}
	q := "INSERT INTO runs (" + strings.Join(cols, ", ") + ") VALUES (" +
		strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ") RETURNING id"
	var id int64
	if err := tx.QueryRowContext(ctx, s.bind(q), vals...).Scan(&id); err != nil {
		return 0, err
	}
	for k, v := range e.Labels {
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO labels (run_id, key, value) VALUES (?, ?, ?)"), id, k, v); err != nil {
			return 0, err
		}
	}
	for key, v := range e.Stats {
		i := strings.LastIndexByte(key, '.')
		if i < 0 {
			return 0, fmt.Errorf("statistic %q: expected QUANTITY.STAT", key)
		}
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO stats (run_id, quantity, stat, value) VALUES (?, ?, ?, ?)"), id, key[:i], key[i+1:], v); err != nil {
			return 0, err
		}
	}
	return id, nil
}
