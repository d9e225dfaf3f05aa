package k8s

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// IndexEnv is the variable the Job controller fills with a pod's completion
// index; the manifest defines it from the pod's annotation as well, so that
// $(JOB_COMPLETION_INDEX) in the arguments always expands.
const IndexEnv = "JOB_COMPLETION_INDEX"

// indexAnnotation carries the completion index on an Indexed Job's pods.
const indexAnnotation = "batch.kubernetes.io/job-completion-index"

// ResultsDir is where each pod writes its shard's results directory:
// ResultsDir/shard-K.
const ResultsDir = "/results"

// runAsUser is the non-root user the image runs as (Containerfile's USER).
const runAsUser = 65532

// JobOptions describe the Job. Each pod runs `servebench Command` (run, or
// sweep) with RunArgs, the flags shared by every shard; the Job adds
// --shard, --start-at, --out and --quiet.
type JobOptions struct {
	Command        string // "run" ("" too) or "sweep"
	Name           string // Job name (a DNS-1123 label)
	Namespace      string // "" leaves it to kubectl's context
	ServiceAccount string
	Image          string
	Shards         int
	StartAt        time.Time // every shard's common start
	RunArgs        []string
	// APIKeyEnv is the variable servebench reads the key from
	// (--api-key-env); APIKeySecret, when set, fills it from that Secret's
	// APIKeySecretKey. The key itself never appears in the manifest.
	APIKeyEnv, APIKeySecret, APIKeySecretKey string
	CPU, Memory                              string // requests = limits, e.g. "2", "1Gi"
	// ResultsClaim names a PersistentVolumeClaim mounted at ResultsDir;
	// "" mounts an emptyDir: the results then live only as long as the pod
	// and the pod log carries the table.
	ResultsClaim string
	// ResultsTo is where the results go: ResultsVolume ("" too) or
	// ResultsLog, the pod log (run --results-to-log), which needs no claim:
	// ResultsDir is then a pod-local emptyDir the run writes before it
	// prints the results.
	ResultsTo string
}

// Commands are the servebench commands a Job's pods can run sharded.
var Commands = []string{"run", "sweep"}

// Where a Job's results go (JobOptions.ResultsTo).
const (
	ResultsVolume = "volume" // ResultsDir: a claim, or an emptyDir
	ResultsLog    = "log"    // the pod log, for kubectl logs
)

// ResultsTargets are ResultsTo's values.
var ResultsTargets = []string{ResultsVolume, ResultsLog}

// Job builds the Indexed Job for opts.
func Job(opts JobOptions) (*batchv1.Job, error) {
	if err := check(opts); err != nil {
		return nil, err
	}
	n := int32(opts.Shards)
	labels := map[string]string{"app.kubernetes.io/name": "servebench", "app.kubernetes.io/instance": opts.Name}
	res, err := resources(opts.CPU, opts.Memory)
	if err != nil {
		return nil, err
	}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.Namespace, Labels: labels},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr(batchv1.IndexedCompletion),
			Completions:    ptr(n),
			Parallelism:    ptr(n),
			// A retried shard would start after the common instant and be
			// refused: fail the index instead of retrying it.
			BackoffLimit: ptr(int32(0)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:      corev1.RestartPolicyNever,
					ServiceAccountName: opts.ServiceAccount,
					SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(runAsUser)),
						RunAsGroup: ptr(int64(runAsUser)), FSGroup: ptr(int64(runAsUser))},
					Containers: []corev1.Container{{
						Name:         "servebench",
						Image:        opts.Image,
						Args:         args(opts),
						Env:          env(opts),
						Resources:    res,
						VolumeMounts: []corev1.VolumeMount{{Name: "results", MountPath: ResultsDir}},
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
					Volumes: []corev1.Volume{{Name: "results", VolumeSource: volume(opts.ResultsClaim)}},
				},
			},
		},
	}, nil
}

func check(opts JobOptions) error {
	if errs := validation.IsDNS1123Label(opts.Name); len(errs) > 0 {
		return fmt.Errorf("--name %q: %s", opts.Name, errs[0])
	}
	if opts.Namespace != "" {
		if errs := validation.IsDNS1123Label(opts.Namespace); len(errs) > 0 {
			return fmt.Errorf("--namespace %q: %s", opts.Namespace, errs[0])
		}
	}
	if opts.ServiceAccount != "" {
		if errs := validation.IsDNS1123Subdomain(opts.ServiceAccount); len(errs) > 0 {
			return fmt.Errorf("--service-account %q: %s", opts.ServiceAccount, errs[0])
		}
	}
	if opts.Image == "" {
		return errors.New("--image: expected the servebench image to run (see Containerfile)")
	}
	if !slices.Contains(Commands, command(opts)) {
		return fmt.Errorf("--command %q: expected one of %s", opts.Command, strings.Join(Commands, ", "))
	}
	if opts.Shards < 1 || opts.Shards > 100000 {
		return fmt.Errorf("--shards %d: expected 1-100000", opts.Shards)
	}
	if opts.APIKeySecret != "" {
		if errs := validation.IsDNS1123Subdomain(opts.APIKeySecret); len(errs) > 0 {
			return fmt.Errorf("--api-key-secret %q: %s", opts.APIKeySecret, errs[0])
		}
		if errs := validation.IsConfigMapKey(opts.APIKeySecretKey); len(errs) > 0 {
			return fmt.Errorf("--api-key-secret-key %q: %s", opts.APIKeySecretKey, errs[0])
		}
		if errs := validation.IsEnvVarName(opts.APIKeyEnv); len(errs) > 0 {
			return fmt.Errorf("--api-key-env %q: %s", opts.APIKeyEnv, errs[0])
		}
	}
	switch opts.ResultsTo {
	case "", ResultsVolume:
	case ResultsLog:
		if opts.ResultsClaim != "" {
			return fmt.Errorf("--results-claim %q with --results-to log: expected one (the log needs no volume)", opts.ResultsClaim)
		}
	default:
		return fmt.Errorf("--results-to %q: expected one of %s", opts.ResultsTo, strings.Join(ResultsTargets, ", "))
	}
	if opts.ResultsClaim != "" {
		if errs := validation.IsDNS1123Subdomain(opts.ResultsClaim); len(errs) > 0 {
			return fmt.Errorf("--results-claim %q: %s", opts.ResultsClaim, errs[0])
		}
	}
	return nil
}

// command is what each pod runs, run unless opts say sweep.
func command(opts JobOptions) string {
	if opts.Command == "" {
		return "run"
	}
	return opts.Command
}

// args are the container's arguments: the command, the shared flags, and what
// makes each pod its own shard.
func args(opts JobOptions) []string {
	idx := "$(" + IndexEnv + ")"
	out := append([]string{command(opts)}, opts.RunArgs...)
	out = append(out,
		"--shard="+idx+"/"+strconv.Itoa(opts.Shards),
		"--start-at="+opts.StartAt.UTC().Format(time.RFC3339),
		"--out="+ResultsDir+"/shard-"+idx,
		"--quiet")
	if opts.ResultsTo == ResultsLog {
		out = append(out, "--results-to-log")
	}
	return out
}

func env(opts JobOptions) []corev1.EnvVar {
	out := []corev1.EnvVar{{Name: IndexEnv, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + indexAnnotation + "']"}}}}
	if opts.APIKeySecret != "" {
		out = append(out, corev1.EnvVar{Name: opts.APIKeyEnv, ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: opts.APIKeySecret}, Key: opts.APIKeySecretKey}}})
	}
	return out
}

func resources(cpu, mem string) (corev1.ResourceRequirements, error) {
	rl := corev1.ResourceList{}
	for _, r := range []struct {
		flag, val string
		name      corev1.ResourceName
	}{{"--cpu", cpu, corev1.ResourceCPU}, {"--memory", mem, corev1.ResourceMemory}} {
		if r.val == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.val)
		if err != nil || q.Sign() <= 0 {
			return corev1.ResourceRequirements{}, fmt.Errorf("%s %q: expected a positive Kubernetes quantity (e.g. 2, 500m, 1Gi)", r.flag, r.val)
		}
		rl[r.name] = q
	}
	// Equal requests and limits: a shard's timing must not depend on what
	// its neighbours burst to.
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}, nil
}

func volume(claim string) corev1.VolumeSource {
	if claim != "" {
		return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}
	}
	return corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
}

// WriteYAML writes job as one YAML document.
func WriteYAML(w io.Writer, job *batchv1.Job) error {
	b, err := yaml.Marshal(job)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

func ptr[T any](v T) *T { return &v }
