package history

import (
	"context"
	"os/exec"
	"testing"

	"github.com/servebench/servebench/bench/result"
)

// TestDetectBuild reads each CI's variables; a directory outside git with
// no CI variables has no build.
func TestDetectBuild(t *testing.T) {
	for _, c := range []struct {
		name string
		env  map[string]string
		want result.Build
	}{
		{"github", map[string]string{"GITHUB_SHA": "abc", "GITHUB_REF_NAME": "main", "GITHUB_RUN_ID": "42",
			"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r"},
			result.Build{Source: "github-actions", Commit: "abc", Branch: "main", CIRunID: "42", CIURL: "https://github.com/o/r/actions/runs/42"}},
		{"github pull request: the head branch, not 7/merge", map[string]string{"GITHUB_SHA": "abc", "GITHUB_REF_NAME": "7/merge", "GITHUB_HEAD_REF": "fix"},
			result.Build{Source: "github-actions", Commit: "abc", Branch: "fix"}},
		{"gitlab", map[string]string{"CI_COMMIT_SHA": "def", "CI_COMMIT_BRANCH": "dev", "CI_PIPELINE_ID": "9", "CI_PIPELINE_URL": "https://gl/p/9"},
			result.Build{Source: "gitlab-ci", Commit: "def", Branch: "dev", CIRunID: "9", CIURL: "https://gl/p/9"}},
		{"generic", map[string]string{"GIT_COMMIT": "123", "BUILD_ID": "5"},
			result.Build{Source: "env", Commit: "123", CIRunID: "5"}},
	} {
		got := DetectBuild(context.Background(), func(k string) string { return c.env[k] }, t.TempDir())
		if got == nil || *got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if got := DetectBuild(context.Background(), func(string) string { return "" }, t.TempDir()); got != nil {
		t.Errorf("outside git, no CI: %+v, want nil", got)
	}
}

// TestDetectBuildGit reads a git work tree's commit and branch.
func TestDetectBuildGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("bench/history: needs git")
	}
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "trunk"}, {"-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	out, _ := exec.Command("git", "-C", dir, "rev-parse", "HEAD").Output()
	got := DetectBuild(context.Background(), func(string) string { return "" }, dir)
	if got == nil || got.Source != "git" || got.Branch != "trunk" || got.Commit+"\n" != string(out) {
		t.Errorf("%+v, want git commit %s on trunk", got, out)
	}
}
