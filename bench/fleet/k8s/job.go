package k8s

import (
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

	"github.com/servebench/servebench/engine/option"
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

// DataDir is where a dataset or trace file reaches the pods, read-only:
// from the ConfigMap JobOptions.DataConfigMap names (one file per key) or
// the claim JobOptions.DataClaim names. The image has a read-only root and
// nothing of the user's, so a --dataset or --trace path must be under it.
const DataDir = "/data"

// HostnameTopology is the node label --spread spreads the pods over.
const HostnameTopology = "kubernetes.io/hostname"

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
	// DataConfigMap or DataClaim (at most one) is mounted read-only at
	// DataDir: a ConfigMap made with `kubectl create configmap NAME
	// --from-file=FILE` (each key a file, 1 MiB in all, Kubernetes' limit),
	// or a PersistentVolumeClaim for larger files.
	DataConfigMap, DataClaim string
	// Spread asks the scheduler to spread the pods evenly over nodes
	// (HostnameTopology), so that no node's CPU or network carries
	// several shards while another carries none.
	Spread bool
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
						VolumeMounts: mounts(opts),
						SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
					}},
					Volumes:                   volumes(opts),
					TopologySpreadConstraints: spread(opts, labels),
				},
			},
		},
	}, nil
}

func check(opts JobOptions) error {
	if err := nameError(append([]k8sName{{"Name", opts.Name, validation.IsDNS1123Label}}, given(
		k8sName{"Namespace", opts.Namespace, validation.IsDNS1123Label},
		k8sName{"ServiceAccount", opts.ServiceAccount, validation.IsDNS1123Subdomain})...)...); err != nil {
		return err
	}
	switch {
	case opts.Image == "":
		return option.Errorf("Image", nil, "expected the servebench image to run (see Containerfile)")
	case !slices.Contains(Commands, command(opts)):
		return option.Errorf("Command", opts.Command, "expected one of %s", strings.Join(Commands, ", "))
	case opts.Shards < 1 || opts.Shards > 100000:
		return option.Errorf("Shards", opts.Shards, "expected 1-100000")
	}
	if opts.APIKeySecret != "" {
		if err := nameError(k8sName{"APIKeySecret", opts.APIKeySecret, validation.IsDNS1123Subdomain},
			k8sName{"APIKeySecretKey", opts.APIKeySecretKey, validation.IsConfigMapKey},
			k8sName{"APIKeyEnv", opts.APIKeyEnv, validation.IsEnvVarName}); err != nil {
			return err
		}
	}
	if err := checkResultsTo(opts); err != nil {
		return err
	}
	if err := nameError(given(k8sName{"ResultsClaim", opts.ResultsClaim, validation.IsDNS1123Subdomain},
		k8sName{"DataConfigMap", opts.DataConfigMap, validation.IsDNS1123Subdomain},
		k8sName{"DataClaim", opts.DataClaim, validation.IsDNS1123Subdomain})...); err != nil {
		return err
	}
	if opts.DataConfigMap != "" && opts.DataClaim != "" {
		return option.Errorf("DataConfigMap", nil, "{DataConfigMap} %q and {DataClaim} %q: expected one (both mount at %s)", opts.DataConfigMap, opts.DataClaim, DataDir)
	}
	return nil
}

// k8sName is an option's value that Kubernetes checks with valid.
type k8sName struct {
	field, value string
	valid        func(string) []string
}

// nameError names the first of names Kubernetes would refuse, and why.
func nameError(names ...k8sName) error {
	for _, n := range names {
		if errs := n.valid(n.value); len(errs) > 0 {
			return option.Errorf(n.field, n.value, "%s", errs[0])
		}
	}
	return nil
}

// given keeps the names whose option was given.
func given(names ...k8sName) []k8sName {
	var out []k8sName
	for _, n := range names {
		if n.value != "" {
			out = append(out, n)
		}
	}
	return out
}

func checkResultsTo(opts JobOptions) error {
	switch opts.ResultsTo {
	case "", ResultsVolume:
	case ResultsLog:
		if opts.ResultsClaim != "" {
			return option.Errorf("ResultsClaim", nil, "{ResultsClaim} %q with {ResultsTo} log: expected one (the log needs no volume)", opts.ResultsClaim)
		}
	default:
		return option.Errorf("ResultsTo", opts.ResultsTo, "expected one of %s", strings.Join(ResultsTargets, ", "))
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
		startAtFlag+opts.StartAt.UTC().Format(time.RFC3339),
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
		field, val string
		name       corev1.ResourceName
	}{{"CPU", cpu, corev1.ResourceCPU}, {"Memory", mem, corev1.ResourceMemory}} {
		if r.val == "" {
			continue
		}
		q, err := resource.ParseQuantity(r.val)
		if err != nil || q.Sign() <= 0 {
			return corev1.ResourceRequirements{}, option.Errorf(r.field, r.val, "expected a positive Kubernetes quantity (e.g. 2, 500m, 1Gi)")
		}
		rl[r.name] = q
	}
	// Equal requests and limits: a shard's timing must not depend on what
	// its neighbours burst to.
	return corev1.ResourceRequirements{Requests: rl, Limits: rl.DeepCopy()}, nil
}

// mounts are the container's: the results, and the data read-only.
func mounts(opts JobOptions) []corev1.VolumeMount {
	out := []corev1.VolumeMount{{Name: "results", MountPath: ResultsDir}}
	if opts.DataConfigMap != "" || opts.DataClaim != "" {
		out = append(out, corev1.VolumeMount{Name: "data", MountPath: DataDir, ReadOnly: true})
	}
	return out
}

// volumes are the pod's: results (a claim or an emptyDir) and the data.
func volumes(opts JobOptions) []corev1.Volume {
	out := []corev1.Volume{{Name: "results", VolumeSource: volume(opts.ResultsClaim)}}
	switch {
	case opts.DataConfigMap != "":
		out = append(out, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: opts.DataConfigMap}}}})
	case opts.DataClaim != "":
		out = append(out, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: opts.DataClaim, ReadOnly: true}}})
	}
	return out
}

// spread is the pods' topology spread over nodes with Spread: at most one
// more of this Job's pods on any node than on another (maxSkew 1), hard
// (DoNotSchedule), counting only nodes whose taints the pods tolerate
// (nodeTaintsPolicy Honor), so a tainted control-plane node with no pod does
// not hold the others pending.
func spread(opts JobOptions, labels map[string]string) []corev1.TopologySpreadConstraint {
	if !opts.Spread {
		return nil
	}
	honor := corev1.NodeInclusionPolicyHonor
	return []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: HostnameTopology, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector:    &metav1.LabelSelector{MatchLabels: labels},
		NodeTaintsPolicy: &honor,
	}}
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

// startAtFlag prefixes the argument carrying a Job's common start.
const startAtFlag = "--start-at="

// ReadJob decodes a Job manifest (as Job and WriteYAML make it) strictly:
// a field Kubernetes does not know is an error naming it.
func ReadJob(r io.Reader) (*batchv1.Job, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(b, &job); err != nil {
		return nil, fmt.Errorf("not a Job manifest: %w", err)
	}
	if job.Kind != "Job" || len(job.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("not a Job manifest (kind %q, %d containers): expected what 'servebench k8s job' prints",
			job.Kind, len(job.Spec.Template.Spec.Containers))
	}
	return &job, nil
}

// Restamp sets the common start of every shard in job to at: the
// --start-at of each container that has one. A manifest is printed with a
// start a few minutes ahead, which is stale once it has been saved and
// reviewed; restamping as it is submitted (servebench k8s apply) keeps the
// rule the pods follow the one they follow now: every pod starts at the
// same instant, fixed before any is created, and a pod that is not running
// by then refuses to start (MaxStartLate) instead of loading the server
// alone. It errs when no container has a --start-at.
func Restamp(job *batchv1.Job, at time.Time) error {
	n := 0
	cs := job.Spec.Template.Spec.Containers
	for i := range cs {
		for j, a := range cs[i].Args {
			if strings.HasPrefix(a, startAtFlag) {
				cs[i].Args[j] = startAtFlag + at.UTC().Format(time.RFC3339)
				n++
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("Job %q has no container argument %s...: expected a manifest 'servebench k8s job' printed", job.Name, startAtFlag)
	}
	return nil
}
