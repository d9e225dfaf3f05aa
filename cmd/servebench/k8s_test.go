package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// TestK8sJob: the manifest decodes strictly into a batch/v1 Job (no field
// Kubernetes does not know), is an Indexed Job with parallelism =
// completions = N, maps each pod's completion index to --shard and its
// results directory, starts every shard at one instant ahead of now, and
// takes the API key from the Secret, never from the environment it was
// generated in.
func TestK8sJob(t *testing.T) {
	t.Setenv("SB_TEST_KEY", "sk-must-not-appear")
	before := time.Now()
	code, stdout, stderr := runMain("k8s", "job", "--shards", "3", "--image", "registry.example/servebench:1",
		"--namespace", "llm", "--service-account", "bench", "--api-key-secret", "vllm-key", "--results-claim", "sb-results",
		"--start-delay", "90s", "--cpu", "500m", "--memory", "1Gi",
		"--", "--base-url", "http://vllm.llm:8000", "--rate", "10", "--requests", "300", "--stream", "on", "--api-key-env", "SB_TEST_KEY")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(stdout), &job); err != nil {
		t.Fatalf("strict decode: %v\n%s", err, stdout)
	}
	s := job.Spec
	if job.APIVersion != "batch/v1" || job.Kind != "Job" || job.Namespace != "llm" || s.CompletionMode == nil ||
		*s.CompletionMode != batchv1.IndexedCompletion || *s.Completions != 3 || *s.Parallelism != 3 || *s.BackoffLimit != 0 {
		t.Errorf("job %+v: want an Indexed batch/v1 Job in llm, 3 completions and parallelism, no retries", job)
	}
	pod := s.Template.Spec
	if pod.ServiceAccountName != "bench" || pod.RestartPolicy != corev1.RestartPolicyNever || len(pod.Containers) != 1 ||
		pod.SecurityContext == nil || !*pod.SecurityContext.RunAsNonRoot {
		t.Fatalf("pod %+v: want service account bench, never restarted, one non-root container", pod)
	}
	c := pod.Containers[0]
	want := []string{"run", "--base-url", "http://vllm.llm:8000", "--rate", "10", "--requests", "300", "--stream", "on", "--api-key-env", "SB_TEST_KEY",
		"--shard=$(JOB_COMPLETION_INDEX)/3"}
	if c.Image != "registry.example/servebench:1" || !slices.Equal(c.Args[:len(want)], want) ||
		!slices.Contains(c.Args, "--out=/results/shard-$(JOB_COMPLETION_INDEX)") {
		t.Errorf("container image %s args %q: want the run flags, then --shard and --out per index", c.Image, c.Args)
	}
	var startAt time.Time
	for _, a := range c.Args {
		if v, ok := strings.CutPrefix(a, "--start-at="); ok {
			var err error
			if startAt, err = time.Parse(time.RFC3339, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if d := startAt.Sub(before); d < 89*time.Second || d > 2*time.Minute {
		t.Errorf("--start-at %v is %v after generation, want --start-delay 90s", startAt, d)
	}
	envs := map[string]corev1.EnvVar{}
	for _, e := range c.Env {
		envs[e.Name] = e
	}
	if e := envs["JOB_COMPLETION_INDEX"]; e.ValueFrom == nil || e.ValueFrom.FieldRef == nil ||
		e.ValueFrom.FieldRef.FieldPath != "metadata.annotations['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("JOB_COMPLETION_INDEX %+v: want it from the completion-index annotation", e)
	}
	if e := envs["SB_TEST_KEY"]; e.Value != "" || e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil ||
		e.ValueFrom.SecretKeyRef.Name != "vllm-key" || e.ValueFrom.SecretKeyRef.Key != "api-key" {
		t.Errorf("API key variable %+v: want it from Secret vllm-key, key api-key", e)
	}
	if strings.Contains(stdout, "sk-must-not-appear") {
		t.Error("the API key from the environment is in the manifest")
	}
	if cpu := c.Resources.Limits[corev1.ResourceCPU]; cpu.String() != "500m" || c.Resources.Requests.Memory().String() != "1Gi" {
		t.Errorf("resources %+v: want cpu 500m and memory 1Gi", c.Resources)
	}
	if v := pod.Volumes[0]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "sb-results" || c.VolumeMounts[0].MountPath != "/results" {
		t.Errorf("volume %+v mount %+v: want claim sb-results at /results", v, c.VolumeMounts)
	}

	// Without a claim, an emptyDir; no Secret, no key variable.
	code, stdout, stderr = runMain("k8s", "job", "--shards", "1", "--image", "sb", "--", "--base-url", "http://vllm:8000", "--stream", "off")
	job = batchv1.Job{}
	if err := yaml.UnmarshalStrict([]byte(stdout), &job); code != 0 || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, stderr)
	}
	if p := job.Spec.Template.Spec; p.Volumes[0].EmptyDir == nil || len(p.Containers[0].Env) != 1 {
		t.Errorf("pod %+v: want an emptyDir and only the index variable", p)
	}
}

// TestK8sJobBadInput: every refusal is exit 2 naming the flag.
func TestK8sJobBadInput(t *testing.T) {
	base := []string{"k8s", "job", "--shards", "2", "--image", "sb"}
	u := []string{"--", "--base-url", "http://x", "--stream", "on"}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"k8s", "job", "--image", "sb"}, u...), "--shards 0"},
		{append([]string{"k8s", "job", "--shards", "2"}, u...), "--image"},
		{append(slices.Clone(base), "--", "--base-url", "http://x"), "--stream on or off"},
		{append(slices.Clone(base), "--", "--stream", "on"), "expected --base-url"},
		{append(slices.Clone(base), "--", "--base-url", "http://x", "--stream", "on", "--bogus"), "unknown flag: --bogus"},
		{append(slices.Clone(base), "--", "--base-url", "http://x", "--stream", "on", "--out", "d"), "--out is set by the Job"},
		{append(append(slices.Clone(base), "--name", "Bad_Name"), u...), `--name "Bad_Name"`},
		{append(append(slices.Clone(base), "--memory", "lots"), u...), `--memory "lots"`},
		{append(append(slices.Clone(base), "--start-delay", "0s"), u...), "--start-delay 0s"},
		{append(slices.Clone(base), "--base-url", "http://x"), "unknown flag: --base-url"},
		{append(append(slices.Clone(base), "stray"), u...), "put run flags after --"},
	} {
		code, _, stderr := runMain(tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}

// TestK8sJobResultsToLog: with --results-to log the manifest (decoded
// strictly) mounts no claim, only the pod-local emptyDir the run writes to
// before printing its results, and every pod's run is given
// --results-to-log; a claim with it, or the flag among the run flags, is
// refused naming the flag.
func TestK8sJobResultsToLog(t *testing.T) {
	code, stdout, stderr := runMain("k8s", "job", "--shards", "2", "--image", "sb", "--results-to", "log",
		"--", "--base-url", "http://vllm:8000", "--rate", "4", "--stream", "on")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(stdout), &job); err != nil {
		t.Fatalf("strict decode: %v\n%s", err, stdout)
	}
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	for _, v := range pod.Volumes {
		if v.EmptyDir == nil || v.PersistentVolumeClaim != nil {
			t.Errorf("volume %+v: want no claim, only a pod-local emptyDir", v)
		}
	}
	if strings.Contains(stdout, "persistentVolumeClaim") || !slices.Contains(c.Args, "--results-to-log") ||
		!slices.Contains(c.Args, "--out=/results/shard-$(JOB_COMPLETION_INDEX)") {
		t.Errorf("args %q: want --results-to-log and the shard's directory, no claim anywhere", c.Args)
	}
	// The volume variant does not print its results to the log.
	_, stdout, _ = runMain("k8s", "job", "--shards", "2", "--image", "sb", "--", "--base-url", "http://vllm:8000", "--rate", "4", "--stream", "on")
	if strings.Contains(stdout, "--results-to-log") {
		t.Errorf("default --results-to volume: the pods print their results too:\n%s", stdout)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--results-to", "log", "--results-claim", "c"}, `--results-claim "c" with --results-to log`},
		{[]string{"--results-to", "stdout"}, `--results-to "stdout": expected one of volume, log`},
		{[]string{"--", "--results-to-log"}, "--results-to-log is set by the Job"},
	} {
		args := append([]string{"k8s", "job", "--shards", "2", "--image", "sb"}, tc.args...)
		if !slices.Contains(tc.args, "--") {
			args = append(args, "--")
		}
		args = append(args, "--base-url", "http://x", "--stream", "on")
		code, _, stderr := runMain(args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %q", args, code, stderr, tc.want)
		}
	}
}

// TestK8sJobSweep: with --command sweep every pod runs `servebench sweep`
// with the sweep flags and its own --shard, and the manifest decodes
// strictly; what a sharded sweep refuses (the adaptive search, an explicit
// early stop, closed-loop levels without --duration) and an unknown
// command are refused before any pod runs, exit 2 naming the flag.
func TestK8sJobSweep(t *testing.T) {
	code, stdout, stderr := runMain("k8s", "job", "--shards", "3", "--image", "sb", "--command", "sweep",
		"--", "--base-url", "http://vllm:8000", "--rate", "10,20", "--requests", "60", "--level-gap", "20s")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict([]byte(stdout), &job); err != nil {
		t.Fatalf("strict decode: %v\n%s", err, stdout)
	}
	args := job.Spec.Template.Spec.Containers[0].Args
	want := []string{"sweep", "--base-url", "http://vllm:8000", "--rate", "10,20", "--requests", "60", "--level-gap", "20s",
		"--shard=$(JOB_COMPLETION_INDEX)/3"}
	if len(args) < len(want) || !slices.Equal(args[:len(want)], want) {
		t.Errorf("args %q: want the sweep flags, then --shard per index", args)
	}
	if strings.Contains(stderr, "--max-error-rate") {
		t.Errorf("k8s job printed the sweep's own warning: %q", stderr)
	}
	for _, tc := range []struct {
		cmd  string
		args []string
		want string
	}{
		{"sweep", []string{"--rate", "10", "--slo", "ttft=1s", "--find-max-rate", "90%"}, "--find-max-rate with --shard"},
		{"sweep", []string{"--rate", "10,20", "--max-error-rate", "5"}, "--max-error-rate"},
		{"sweep", []string{"--concurrency", "4,8"}, "--duration"},
		{"sweep", []string{"--concurrency", "1,4", "--duration", "1m"}, "concurrency 1 is split over the shards"},
		{"sweep", []string{"--rate", "10", "--stream", "both"}, "--stream on or off"},
		{"sweep", []string{"--rate", "10", "--turns", "x"}, "--turns"},
		{"probe", []string{"--rate", "10"}, `--command "probe": expected one of run, sweep`},
	} {
		args := append([]string{"k8s", "job", "--shards", "2", "--image", "sb", "--command", tc.cmd, "--", "--base-url", "http://x"}, tc.args...)
		code, _, stderr := runMain(args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %q", args, code, stderr, tc.want)
		}
	}
}

// TestK8sJobDataAndSpread: --data-configmap and --data-claim mount at
// /data read-only (one of them), --spread spreads the pods over nodes
// evenly, and the manifest still decodes strictly.
func TestK8sJobDataAndSpread(t *testing.T) {
	job := func(t *testing.T, flags ...string) batchv1.Job {
		t.Helper()
		args := append(append([]string{"k8s", "job", "--shards", "4", "--image", "sb", "--name", "sb-data"}, flags...),
			"--", "--base-url", "http://vllm:8000", "--rate", "4", "--stream", "on", "--dataset", "sharegpt:/data/sharegpt.json")
		code, stdout, stderr := runMain(args...)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var j batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(stdout), &j); err != nil {
			t.Fatalf("strict decode: %v\n%s", err, stdout)
		}
		return j
	}
	dataMount := func(j batchv1.Job) (corev1.VolumeMount, corev1.Volume, bool) {
		p := j.Spec.Template.Spec
		for _, m := range p.Containers[0].VolumeMounts {
			if m.MountPath != "/data" {
				continue
			}
			for _, v := range p.Volumes {
				if v.Name == m.Name {
					return m, v, true
				}
			}
		}
		return corev1.VolumeMount{}, corev1.Volume{}, false
	}
	m, v, ok := dataMount(job(t, "--data-configmap", "sharegpt"))
	if !ok || !m.ReadOnly || v.ConfigMap == nil || v.ConfigMap.Name != "sharegpt" {
		t.Errorf("--data-configmap: mount %+v volume %+v: want ConfigMap sharegpt read-only at /data", m, v)
	}
	m, v, ok = dataMount(job(t, "--data-claim", "datasets"))
	if !ok || !m.ReadOnly || v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "datasets" || !v.PersistentVolumeClaim.ReadOnly {
		t.Errorf("--data-claim: mount %+v volume %+v: want claim datasets read-only at /data", m, v)
	}
	plain := job(t)
	if _, _, ok := dataMount(plain); ok || len(plain.Spec.Template.Spec.TopologySpreadConstraints) != 0 {
		t.Errorf("no data or spread flag: volumes %+v, spread %+v", plain.Spec.Template.Spec.Volumes, plain.Spec.Template.Spec.TopologySpreadConstraints)
	}
	spread := job(t, "--spread").Spec.Template
	tsc := spread.Spec.TopologySpreadConstraints
	if len(tsc) != 1 || tsc[0].TopologyKey != "kubernetes.io/hostname" || tsc[0].MaxSkew != 1 ||
		tsc[0].WhenUnsatisfiable != corev1.DoNotSchedule || tsc[0].LabelSelector == nil {
		t.Fatalf("--spread: %+v: want maxSkew 1 over kubernetes.io/hostname", tsc)
	}
	for k, val := range tsc[0].LabelSelector.MatchLabels { // selects this Job's pods
		if spread.Labels[k] != val {
			t.Errorf("spread selector %v does not select the pods' labels %v", tsc[0].LabelSelector.MatchLabels, spread.Labels)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--data-configmap", "a", "--data-claim", "b"}, `--data-configmap "a" and --data-claim "b": expected one`},
		{[]string{"--data-configmap", "Bad_Name"}, `--data-configmap "Bad_Name"`},
		{[]string{"--data-claim", "-x"}, `--data-claim "-x"`},
	} {
		args := append(append([]string{"k8s", "job", "--shards", "2", "--image", "sb"}, tc.args...), "--", "--base-url", "http://x", "--stream", "on")
		code, _, stderr := runMain(args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %q", args, code, stderr, tc.want)
		}
	}
}

// TestK8sApplyRestamps: a manifest saved long ago gets --start-at set
// afresh as `k8s apply` submits it, and is handed whole to kubectl apply
// (a script standing in for kubectl records its arguments and input);
// what is not a Job manifest is refused, exit 2 naming -f.
func TestK8sApplyRestamps(t *testing.T) {
	dir := t.TempDir()
	code, stdout, stderr := runMain("k8s", "job", "--shards", "2", "--image", "sb", "--spread",
		"--", "--base-url", "http://vllm:8000", "--rate", "4", "--stream", "on")
	if code != 0 {
		t.Fatalf("k8s job: exit %d: %s", code, stderr)
	}
	stale := regexp.MustCompile(`--start-at=[0-9TZ:-]+`).ReplaceAllString(stdout, "--start-at=2020-01-02T03:04:05Z")
	saved := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(saved, []byte(stale), 0o644); err != nil {
		t.Fatal(err)
	}
	startAt := func(t *testing.T, manifest string) time.Duration {
		t.Helper()
		var job batchv1.Job
		if err := yaml.UnmarshalStrict([]byte(manifest), &job); err != nil {
			t.Fatalf("strict decode: %v\n%s", err, manifest)
		}
		for _, a := range job.Spec.Template.Spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(a, "--start-at="); ok {
				at, err := time.Parse(time.RFC3339, v)
				if err != nil {
					t.Fatal(err)
				}
				return time.Until(at)
			}
		}
		t.Fatalf("no --start-at in %s", manifest)
		return 0
	}
	code, printed, stderr := runMain("k8s", "apply", "-f", saved, "--start-delay", "90s", "--print")
	if code != 0 {
		t.Fatalf("k8s apply --print: exit %d: %s", code, stderr)
	}
	if d := startAt(t, printed); d < 85*time.Second || d > 91*time.Second {
		t.Errorf("--start-at %v from now, want --start-delay 90s from the submission", d)
	}
	if !strings.Contains(printed, "topologySpreadConstraints") {
		t.Errorf("the restamped manifest lost the rest of the Job:\n%s", printed)
	}

	kubectl := filepath.Join(dir, "kubectl")
	script := "#!/bin/sh\necho \"$@\" > " + filepath.Join(dir, "args") + "\ncat > " + filepath.Join(dir, "stdin") + "\n"
	if err := os.WriteFile(kubectl, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runMain("k8s", "apply", "-f", saved, "--kubectl", kubectl); code != 0 {
		t.Fatalf("k8s apply: exit %d: %s", code, stderr)
	}
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	in, _ := os.ReadFile(filepath.Join(dir, "stdin"))
	if strings.TrimSpace(string(args)) != "apply -f -" {
		t.Errorf("kubectl ran with %q, want apply -f -", args)
	}
	if d := startAt(t, string(in)); d < 110*time.Second || d > 2*time.Minute+time.Second {
		t.Errorf("kubectl got --start-at %v from now, want the default --start-delay 2m", d)
	}

	notJob := filepath.Join(dir, "cm.yaml")
	_ = os.WriteFile(notJob, []byte("apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-f", notJob, "--print"}, "-f " + notJob},
		{[]string{"-f", filepath.Join(dir, "missing.yaml")}, "-f: open"},
		{[]string{"--print"}, "-f: expected the manifest"},
		{[]string{"-f", saved, "--start-delay", "0s"}, "--start-delay 0s"},
		{[]string{"-f", saved, "--kubectl", filepath.Join(dir, "no-kubectl")}, "--kubectl"},
	} {
		code, _, stderr := runMain(append([]string{"k8s", "apply"}, tc.args...)...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 naming %q", tc.args, code, stderr, tc.want)
		}
	}
}
