package history

import (
	"context"
	"os/exec"
	"strings"
	"time"

	"github.com/servebench/servebench/bench/result"
)

// DetectBuild reads which commit, branch and CI job produced a run from
// the CI's environment (getenv: os.Getenv in the command): GitHub Actions
// (GITHUB_SHA, GITHUB_HEAD_REF or GITHUB_REF_NAME, GITHUB_RUN_ID, the run's
// URL from GITHUB_SERVER_URL and GITHUB_REPOSITORY), GitLab CI
// (CI_COMMIT_SHA, CI_COMMIT_BRANCH or CI_COMMIT_REF_NAME, CI_PIPELINE_ID,
// CI_PIPELINE_URL), then the generic GIT_COMMIT, GIT_BRANCH, BUILD_ID and
// BUILD_URL (Jenkins and others); else git rev-parse in dir when it is a
// git work tree. nil when none says anything.
func DetectBuild(ctx context.Context, getenv func(string) string, dir string) *result.Build {
	first := func(keys ...string) string {
		for _, k := range keys {
			if v := strings.TrimSpace(getenv(k)); v != "" {
				return v
			}
		}
		return ""
	}
	switch {
	case getenv("GITHUB_SHA") != "":
		b := &result.Build{Source: "github-actions", Commit: first("GITHUB_SHA"),
			Branch: first("GITHUB_HEAD_REF", "GITHUB_REF_NAME"), CIRunID: first("GITHUB_RUN_ID")}
		if srv, repo := first("GITHUB_SERVER_URL"), first("GITHUB_REPOSITORY"); srv != "" && repo != "" && b.CIRunID != "" {
			b.CIURL = strings.TrimSuffix(srv, "/") + "/" + repo + "/actions/runs/" + b.CIRunID
		}
		return b
	case getenv("CI_COMMIT_SHA") != "":
		return &result.Build{Source: "gitlab-ci", Commit: first("CI_COMMIT_SHA"),
			Branch:  first("CI_COMMIT_BRANCH", "CI_MERGE_REQUEST_SOURCE_BRANCH_NAME", "CI_COMMIT_REF_NAME"),
			CIRunID: first("CI_PIPELINE_ID"), CIURL: first("CI_PIPELINE_URL")}
	case getenv("GIT_COMMIT") != "" || getenv("BUILD_ID") != "":
		return &result.Build{Source: "env", Commit: first("GIT_COMMIT"), Branch: first("GIT_BRANCH"),
			CIRunID: first("BUILD_ID"), CIURL: first("BUILD_URL")}
	}
	return gitBuild(ctx, dir)
}

// gitBuild asks git for dir's HEAD commit and branch ("" for a detached
// HEAD); nil when dir is not in a git work tree or git is missing.
func gitBuild(ctx context.Context, dir string) *result.Build {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	git := func(args ...string) string {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		out, err := cmd.Output()
		if err != nil {
			return ""
		}
		return strings.TrimSpace(string(out))
	}
	commit := git("rev-parse", "HEAD")
	if commit == "" {
		return nil
	}
	b := &result.Build{Source: "git", Commit: commit}
	if br := git("rev-parse", "--abbrev-ref", "HEAD"); br != "HEAD" {
		b.Branch = br
	}
	return b
}
