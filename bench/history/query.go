package history

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Filter selects entries. Zero fields select everything.
type Filter struct {
	WorkloadFP string // exact, or a prefix of at least 4 characters
	ServerFP   string
	Run        string
	Branch     string
	Since      time.Time         // started at or after
	Before     time.Time         // started before
	Labels     map[string]string // every one must match
	Last       int               // only the last N that match (by start time)
}

// Query returns the entries f selects, oldest first, with their labels and
// statistics.
func (s *Store) Query(ctx context.Context, f Filter) ([]Entry, error) {
	where, args := f.where()
	q := "SELECT id, recorded_at, started_at, source, run_name, workload_fp, server_fp, commit_sha, branch, ci_run_id, ci_url, build_source, " +
		"tool, server_version, server_command, server_preset, model, bundled, machine, workload, summary, gate FROM runs" + where +
		" ORDER BY started_at DESC, id DESC"
	if f.Last > 0 {
		q += fmt.Sprintf(" LIMIT %d", f.Last)
	}
	rows, err := s.db.QueryContext(ctx, s.bind(q), args...)
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.name, err)
	}
	var out []Entry
	for rows.Next() {
		e, err := scanEntry(rows)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("history %s: %w", s.name, err)
		}
		out = append(out, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.name, err)
	}
	slices.Reverse(out)
	if err := s.fill(ctx, out); err != nil {
		return nil, fmt.Errorf("history %s: %w", s.name, err)
	}
	return out, nil
}

func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	add := func(cond string, vs ...any) { conds, args = append(conds, cond), append(args, vs...) }
	if f.WorkloadFP != "" {
		add("workload_fp LIKE ?", f.WorkloadFP+"%")
	}
	if f.ServerFP != "" {
		add("server_fp LIKE ?", f.ServerFP+"%")
	}
	if f.Run != "" {
		add("run_name = ?", f.Run)
	}
	if f.Branch != "" {
		add("branch = ?", f.Branch)
	}
	if !f.Since.IsZero() {
		add("started_at >= ?", timeText(f.Since))
	}
	if !f.Before.IsZero() {
		add("started_at < ?", timeText(f.Before))
	}
	keys := make([]string, 0, len(f.Labels))
	for k := range f.Labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		add("EXISTS (SELECT 1 FROM labels l WHERE l.run_id = runs.id AND l.key = ? AND l.value = ?)", k, f.Labels[k])
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

func scanEntry(rows *sql.Rows) (Entry, error) {
	var e Entry
	var recorded, started, bundled, machine, workload, summary string
	err := rows.Scan(&e.ID, &recorded, &started, &e.Source, &e.Run, &e.WorkloadFP, &e.ServerFP, &e.Build.Commit, &e.Build.Branch,
		&e.Build.CIRunID, &e.Build.CIURL, &e.Build.Source, &e.Tool, &e.ServerVersion, &e.ServerCommand, &e.Preset, &e.Model,
		&bundled, &machine, &workload, &summary, &e.Gate)
	if err != nil {
		return e, err
	}
	if e.RecordedAt, err = time.Parse(timeLayout, recorded); err != nil {
		return e, fmt.Errorf("run %d: recorded_at: %w", e.ID, err)
	}
	if e.StartedAt, err = time.Parse(timeLayout, started); err != nil {
		return e, fmt.Errorf("run %d: started_at: %w", e.ID, err)
	}
	for _, j := range []struct {
		col, text string
		v         any
	}{{"machine", machine, &e.Machine}, {"workload", workload, &e.Workload}, {"summary", summary, &e.Summary}, {"bundled", bundled, &e.Bundled}} {
		if j.text == "" {
			continue
		}
		if err := json.Unmarshal([]byte(j.text), j.v); err != nil {
			return e, fmt.Errorf("run %d: %s: %w", e.ID, j.col, err)
		}
	}
	return e, nil
}

// fill reads the entries' labels and statistics.
func (s *Store) fill(ctx context.Context, es []Entry) error {
	if len(es) == 0 {
		return nil
	}
	byID := make(map[int64]*Entry, len(es))
	ids := make([]any, len(es))
	for i := range es {
		byID[es[i].ID], ids[i] = &es[i], es[i].ID
		es[i].Stats, es[i].Labels = map[string]float64{}, map[string]string{}
	}
	in := " IN (" + strings.TrimSuffix(strings.Repeat("?, ", len(ids)), ", ") + ")"
	rows, err := s.db.QueryContext(ctx, s.bind("SELECT run_id, quantity, stat, value FROM stats WHERE run_id"+in), ids...)
	if err != nil {
		return err
	}
	for rows.Next() {
		var id int64
		var q, st string
		var v float64
		if err := rows.Scan(&id, &q, &st, &v); err != nil {
			rows.Close()
			return err
		}
		byID[id].Stats[q+"."+st] = v
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	rows, err = s.db.QueryContext(ctx, s.bind("SELECT run_id, key, value FROM labels WHERE run_id"+in), ids...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var k, v string
		if err := rows.Scan(&id, &k, &v); err != nil {
			return err
		}
		byID[id].Labels[k] = v
	}
	return rows.Err()
}
