package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench/fleet/k8s"
	"github.com/servebench/servebench/client"
)

func newK8sCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes manifests for running servebench's shards on many machines",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newK8sJobCmd(), newK8sApplyCmd())
	return cmd
}

// k8sJobOptions are the flags of `servebench k8s job`.
type k8sJobOptions struct {
	k8s.JobOptions
	startDelay time.Duration
}

func newK8sJobCmd() *cobra.Command {
	var o k8sJobOptions
	cmd := &cobra.Command{
		Use:   "job --shards N --image IMAGE [flags] -- [run or sweep flags]",
		Short: "Print an Indexed Job that runs one workload as N synchronized shards",
		Long: `k8s job prints, on stdout, a Kubernetes Indexed Job (batch/v1) whose N pods each run
'servebench run [run flags] --shard K/N --start-at T': the same seeded workload, pod K sending
its slice, all starting at T (--start-delay from now). Each pod writes its results directory
to /results/shard-K: on the PersistentVolumeClaim --results-claim names, or an emptyDir that
lives as long as the pod (its log keeps the table). With --results-to log no claim is needed:
each pod also prints its results as a checksummed block in its log (run --results-to-log),
and 'servebench merge' reads the saved 'kubectl logs' of every pod. The API key comes from a
Secret (--api-key-secret) into the variable --api-key-env names; it is never in the manifest.
With --command sweep each pod runs 'servebench sweep [sweep flags] --shard K/N --start-at T'
instead: every shard runs every level, each level starting at the same instant on all (see
'servebench sweep --help'); what a sharded sweep refuses is refused here, before any pod runs.
A dataset or trace reaches the pods read-only at /data: from a ConfigMap (--data-configmap,
made with 'kubectl create configmap NAME --from-file=FILE', 1 MiB in all) or a claim
(--data-claim); give the run --dataset /data/FILE. --spread spreads the pods over nodes.
T is fixed when the manifest is printed: submit a saved manifest with 'servebench k8s apply',
which sets T afresh as it submits.`,
		Example: `  servebench k8s job --shards 4 --image registry.example.com/servebench:0.1 \
    --namespace llm --results-claim servebench-results --api-key-secret vllm-key \
    -- --base-url http://vllm.llm:8000 --rate 40 --requests 4000 --stream on | kubectl apply -f -
  servebench k8s job --shards 4 --image registry.example.com/servebench:0.1 --results-to log \
    -- --base-url http://vllm.llm:8000 --rate 40 --requests 4000 --stream on | kubectl apply -f -
  servebench k8s job --shards 4 --image registry.example.com/servebench:0.1 --command sweep \
    -- --base-url http://vllm.llm:8000 --rate 20,40,80 --duration 2m --level-gap 20s | kubectl apply -f -
  kubectl create configmap sharegpt --from-file=sharegpt.json
  servebench k8s job --shards 4 --image registry.example.com/servebench:0.1 --data-configmap sharegpt --spread \
    -- --base-url http://vllm.llm:8000 --rate 40 --requests 4000 --stream on --dataset sharegpt:/data/sharegpt.json > job.yaml
  servebench k8s apply -f job.yaml`,
		Annotations: map[string]string{validatesItself: "manifest"},
		Args:        cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 && len(args) > 0 {
				return usageErr(fmt.Errorf("unexpected argument %q: put %s flags after --", args[0], o.Command))
			}
			o.StartAt = time.Now().Add(o.startDelay).Truncate(time.Second)
			if err := checkShardArgs(args, &o.JobOptions); err != nil {
				return usageErr(err)
			}
			if o.startDelay <= 0 {
				return usageErr(fmt.Errorf("--start-delay %v: expected a duration > 0 (time for every pod to be scheduled and pull the image)", o.startDelay))
			}
			job, err := k8s.Job(o.JobOptions)
			if err != nil {
				return usageErr(err)
			}
			return k8s.WriteYAML(cmd.OutOrStdout(), job)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Command, "command", "run", "what each pod runs sharded: run (one workload) or sweep (every level of a sweep)")
	f.IntVar(&o.Shards, "shards", 0, "number of shards (pods), each sending request i when i mod N is its index")
	f.StringVar(&o.Image, "image", "", "the servebench image (see Containerfile)")
	f.StringVar(&o.Name, "name", "servebench", "the Job's name")
	f.StringVar(&o.Namespace, "namespace", "", "the Job's namespace (default: kubectl's)")
	f.StringVar(&o.ServiceAccount, "service-account", "", "the pods' service account")
	f.DurationVar(&o.startDelay, "start-delay", 2*time.Minute, "--start-at is this far ahead of now: every pod must be running by then")
	f.StringVar(&o.APIKeySecret, "api-key-secret", "", "Secret holding the API key (mounted as the variable the run's --api-key-env names)")
	f.StringVar(&o.APIKeySecretKey, "api-key-secret-key", "api-key", "key of the API key inside --api-key-secret")
	f.StringVar(&o.CPU, "cpu", "2", "CPU per pod (requests = limits)")
	f.StringVar(&o.Memory, "memory", "2Gi", "memory per pod (requests = limits)")
	f.StringVar(&o.ResultsClaim, "results-claim", "", "PersistentVolumeClaim for the results (ReadWriteMany when pods land on several nodes); default an emptyDir")
	f.StringVar(&o.ResultsTo, "results-to", k8s.ResultsVolume, "where the results go: volume (/results: --results-claim or an emptyDir) or log (each pod's log, for kubectl logs and merge; no claim)")
	f.StringVar(&o.DataConfigMap, "data-configmap", "", "ConfigMap mounted read-only at "+k8s.DataDir+" (each key a file: kubectl create configmap NAME --from-file=FILE; 1 MiB in all)")
	f.StringVar(&o.DataClaim, "data-claim", "", "PersistentVolumeClaim mounted read-only at "+k8s.DataDir+" (datasets or traces over a ConfigMap's 1 MiB)")
	f.BoolVar(&o.Spread, "spread", false, "spread the pods evenly over nodes (topology spread over "+k8s.HostnameTopology+", at most one more on any node)")
	return cmd
}

// k8sApplyOptions are the flags of `servebench k8s apply`.
type k8sApplyOptions struct {
	file, kubectl string
	startDelay    time.Duration
	print         bool
}

func newK8sApplyCmd() *cobra.Command {
	var o k8sApplyOptions
	cmd := &cobra.Command{
		Use:   "apply -f FILE [--start-delay D] [--print]",
		Short: "Submit a saved 'k8s job' manifest with its start time set afresh",
		Long: `k8s apply reads a manifest 'servebench k8s job' printed (-f FILE, or - for stdin), sets every
shard's --start-at to --start-delay from now, and pipes it to 'kubectl apply -f -' (--print
writes it to stdout instead). The start printed with the manifest is stale once the manifest has
been saved and reviewed; the rule the pods follow stays the one they follow with a fresh one:
all start at the instant fixed before any pod exists, and a pod not running by then refuses to
start rather than load the server alone (no API access and no Service between the pods needed).`,
		Example: `  servebench k8s job --shards 4 --image registry.example.com/servebench:0.1 \
    -- --base-url http://vllm.llm:8000 --rate 40 --requests 4000 --stream on > job.yaml
  servebench k8s apply -f job.yaml --start-delay 90s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runK8sApply(cmd, &o) },
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "file", "f", "", "the Job manifest 'servebench k8s job' printed (- for stdin)")
	f.DurationVar(&o.startDelay, "start-delay", 2*time.Minute, "--start-at is this far ahead of the submission: every pod must be running by then")
	f.StringVar(&o.kubectl, "kubectl", "kubectl", "the kubectl to run (its current context and namespace apply)")
	f.BoolVar(&o.print, "print", false, "print the stamped manifest instead of running kubectl apply")
	return cmd
}

func runK8sApply(cmd *cobra.Command, o *k8sApplyOptions) error {
	if o.file == "" {
		return usageErr(errors.New("-f: expected the manifest 'servebench k8s job' printed (- for stdin)"))
	}
	if o.startDelay <= 0 {
		return usageErr(fmt.Errorf("--start-delay %v: expected a duration > 0 (time for every pod to be scheduled and pull the image)", o.startDelay))
	}
	in := cmd.InOrStdin()
	if o.file != "-" {
		f, err := os.Open(o.file)
		if err != nil {
			return usageErr(fmt.Errorf("-f: %w", err))
		}
		defer f.Close()
		in = f
	}
	job, err := k8s.ReadJob(in)
	if err == nil {
		err = k8s.Restamp(job, time.Now().Add(o.startDelay).Truncate(time.Second))
	}
	if err != nil {
		return usageErr(fmt.Errorf("-f %s: %w", o.file, err))
	}
	var manifest bytes.Buffer
	if err := k8s.WriteYAML(&manifest, job); err != nil {
		return err
	}
	if o.print {
		_, err := cmd.OutOrStdout().Write(manifest.Bytes())
		return err
	}
	path, err := exec.LookPath(o.kubectl)
	if err != nil {
		return usageErr(fmt.Errorf("--kubectl %q: %w", o.kubectl, err))
	}
	kc := exec.CommandContext(cmd.Context(), path, "apply", "-f", "-")
	kc.Stdin, kc.Stdout, kc.Stderr = &manifest, cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := kc.Run(); err != nil {
		return fmt.Errorf("%s apply: %w", o.kubectl, err)
	}
	return nil
}

// checkShardArgs parses the flags as `servebench run` (or sweep) would, so
// a typo fails here and not in N pods, and refuses what the Job sets
// itself. A sweep's flags are also checked as pod 0 will check them, so
// what a sharded sweep refuses is refused now. It sets o.RunArgs and
// o.APIKeyEnv.
func checkShardArgs(args []string, o *k8s.JobOptions) error {
	var parse *cobra.Command
	switch o.Command {
	case "", "run":
		parse = newRunCmd()
	case "sweep":
		parse, _ = sweepCommand()
	default:
		return fmt.Errorf("--command %q: expected one of %s", o.Command, strings.Join(k8s.Commands, ", "))
	}
	name := parse.Name()
	fs := parse.Flags()
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%s flags: %w", name, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s flags: unexpected argument %q", name, fs.Arg(0))
	}
	for _, flag := range []string{"shard", "start-at", "out", "quiet", "results-to-log"} {
		if f := fs.Lookup(flag); f != nil && f.Changed {
			return fmt.Errorf("%s flags: --%s is set by the Job for each pod (results: k8s job --results-to)", name, flag)
		}
	}
	if f := fs.Lookup("stream"); f != nil && f.Value.String() == "both" {
		return fmt.Errorf("%s flags: expected --stream on or off: the shards start one run together", name)
	}
	if !fs.Changed("base-url") {
		return fmt.Errorf("%s flags: expected --base-url: every shard must load the same server (a bundled engine per pod would not be one)", name)
	}
	if name == "sweep" {
		cmd, so := sweepCommand()
		pod0 := append(slices.Clone(args), "--shard=0/"+strconv.Itoa(max(o.Shards, 1)), "--start-at="+o.StartAt.UTC().Format(time.RFC3339))
		if err := cmd.Flags().Parse(pod0); err != nil {
			return fmt.Errorf("sweep flags: %w", err)
		}
		if _, err := so.plan(cmd.Flags(), io.Discard); err != nil {
			return fmt.Errorf("sweep flags: %w", err)
		}
	}
	o.RunArgs = args
	o.APIKeyEnv = client.DefaultAPIKeyEnv
	if f := fs.Lookup("api-key-env"); f != nil {
		o.APIKeyEnv = f.Value.String()
	}
	return nil
}
