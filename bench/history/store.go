package history

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go
)

// BusyTimeoutMS is how long an SQLite writer waits for another's
// transaction before giving up: a CI job's Add takes milliseconds, so ten
// seconds covers many jobs finishing together.
const BusyTimeoutMS = 10000

// ErrNoHistory marks a history that does not exist where a reader expected
// one (a missing SQLite file): show and the gate say so instead of
// creating an empty one.
var ErrNoHistory = errors.New("no history database")

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Store is one history database. Its methods are safe for concurrent use.
type Store struct {
	db       *sql.DB
	postgres bool
	name     string // what the user gave, password left out
}

// IsPostgres reports whether dsn names a PostgreSQL database rather than
// an SQLite file.
func IsPostgres(dsn string) bool {
	return strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://")
}

// Open opens (and migrates to the latest schema) the history dsn names: a
// postgres:// URL or an SQLite file's path. With mustExist, a missing
// SQLite file is ErrNoHistory rather than a new empty history.
func Open(ctx context.Context, dsn string, mustExist bool) (*Store, error) {
	s := &Store{postgres: IsPostgres(dsn), name: Redact(dsn)}
	var err error
	if s.postgres {
		s.db, err = sql.Open("pgx", dsn)
	} else {
		s.db, err = openSQLite(dsn, mustExist)
	}
	if err != nil {
		return nil, fmt.Errorf("history %s: %w", s.name, err)
	}
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("history %s: %w", s.name, err)
	}
	return s, nil
}

// openSQLite opens path with the settings that let several processes
// write it at once: WAL (readers do not block the writer), a busy timeout,
// and transactions that take the write lock when they begin, so two
// writers queue instead of one failing at its first write.
func openSQLite(path string, mustExist bool) (*sql.DB, error) {
	if path == "" || strings.ContainsAny(path, "?#") {
		return nil, fmt.Errorf("expected an SQLite file's path (without ? or #) or a postgres:// URL")
	}
	if _, err := os.Stat(path); mustExist && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s does not exist", ErrNoHistory, path)
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout("+strconv.Itoa(BusyTimeoutMS)+")")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	return sql.Open("sqlite", "file:"+path+"?"+q.Encode())
}

// Redact leaves a postgres URL's password out of messages.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.User == nil {
		return dsn
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}

// String names the database (a postgres password left out).
func (s *Store) String() string { return s.name }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// bind rewrites a query's ? placeholders as PostgreSQL's $1, $2...
func (s *Store) bind(q string) string {
	if !s.postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, c := range q {
		if c == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

// migration is one numbered file of migrations/.
type migration struct {
	version int
	sql     string
}

// migrations are the schema's versions in order. {{ID}} is the one
// spelling the two engines do not share: an auto-numbered primary key.
func (s *Store) migrations() ([]migration, error) {
	entries, err := migrationFiles.ReadDir("migrations")
	if err != nil {
		return nil, err
	}
	id := "INTEGER PRIMARY KEY AUTOINCREMENT"
	if s.postgres {
		id = "BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY"
	}
	var ms []migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("migration %s: expected NNN_name.sql", e.Name())
		}
		body, err := migrationFiles.ReadFile("migrations/" + e.Name())
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{v, strings.ReplaceAll(string(body), "{{ID}}", id)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate applies the migrations the database lacks, in one transaction,
// recording each in schema_migrations. Two processes migrating at once
// take turns: SQLite's immediate transactions, PostgreSQL's advisory lock.
func (s *Store) migrate(ctx context.Context) error {
	ms, err := s.migrations()
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() //nolint:errcheck // after Commit, a no-op
	if s.postgres {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7240531)"); err != nil {
			return err
		}
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)`); err != nil {
		return err
	}
	var have sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT MAX(version) FROM schema_migrations").Scan(&have); err != nil {
		return err
	}
	if last := ms[len(ms)-1].version; have.Int64 > int64(last) {
		return fmt.Errorf("schema version %d is newer than this servebench's %d: expected a newer servebench", have.Int64, last)
	}
	for _, m := range ms {
		if int64(m.version) <= have.Int64 {
			continue
		}
		for _, stmt := range splitStatements(m.sql) {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return fmt.Errorf("migration %d: %w", m.version, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.bind("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)"), m.version, nowText()); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// splitStatements splits a migration at its semicolons, dropping comment
// lines (the migrations hold no string with a semicolon).
func splitStatements(src string) []string {
	var lines []string
	for _, l := range strings.Split(src, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "--") {
			lines = append(lines, l)
		}
	}
	var out []string
	for _, st := range strings.Split(strings.Join(lines, "\n"), ";") {
		if st = strings.TrimSpace(st); st != "" {
			out = append(out, st)
		}
	}
	return out
}
