// Package pgtest starts a real PostgreSQL server on loopback for tests of
// the history's PostgreSQL store: Debian's postgresql binaries (initdb,
// pg_ctl), a data directory of its own, a free port, stopped when the test
// ends. PostgreSQL refuses to run as root, so as root it runs as the
// postgres user (runuser), on a directory chowned to it.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// Server is a running PostgreSQL.
type Server struct {
	Port int
	n    atomic.Int64
}

// binDir finds Debian's PostgreSQL binaries (the newest version). Without
// them it fails the test when CI=true (.ci/run installs postgresql) and
// skips it elsewhere, naming the package.
func binDir(t testing.TB) string {
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Strings(dirs)
	for i := len(dirs) - 1; i >= 0; i-- {
		if _, err := os.Stat(filepath.Join(dirs[i], "pg_ctl")); err == nil {
			return dirs[i]
		}
	}
	msg := "needs PostgreSQL's initdb and pg_ctl (/usr/lib/postgresql/*/bin): apt-get install postgresql"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Start starts a PostgreSQL server for the test and stops it at its end.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := binDir(t)
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	as := asUser(t, dir)
	data, sock, logf := filepath.Join(dir, "data"), dir, filepath.Join(dir, "postgres.log")
	run := func(args ...string) error {
		cmd := exec.Command(as[0], append(as[1:], args...)...)
		cmd.Dir = dir // the postgres user may not read the test's working directory
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run(filepath.Join(bin, "initdb"), "-A", "trust", "-U", "postgres", "-D", data); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	port := freePort(t)
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off", port, sock)
	if err := run(filepath.Join(bin, "pg_ctl"), "-D", data, "-l", logf, "-w", "-o", opts, "start"); err != nil {
		log, _ := os.ReadFile(logf)
		t.Fatalf("pgtest: %v\n%s", err, log)
	}
	t.Cleanup(func() {
		if err := run(filepath.Join(bin, "pg_ctl"), "-D", data, "-m", "fast", "-w", "stop"); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return &Server{Port: port}
}

// asUser is the command prefix that runs PostgreSQL's binaries: as the
// postgres user when the test runs as root (dir handed to it), else as
// the test's own user.
func asUser(t testing.TB, dir string) []string {
	if os.Geteuid() != 0 {
		return []string{"env"}
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		t.Fatalf("pgtest: running as root, PostgreSQL needs the postgres user (apt-get install postgresql): %v", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	return []string{"runuser", "-u", "postgres", "--"}
}

func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// DSN is the URL of database name on the server.
func (s *Server) DSN(name string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.Port, name)
}

// NewDatabase creates an empty database and returns its URL.
func (s *Server) NewDatabase(t testing.TB) string {
	t.Helper()
	db, err := sql.Open("pgx", s.DSN("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	name := fmt.Sprintf("test%d", s.n.Add(1))
	if _, err := db.ExecContext(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: create database: %v", err)
	}
	return s.DSN(name)
}
