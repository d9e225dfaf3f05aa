package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/bench/k8s"
	"github.com/servebench/servebench/client"
)

func newK8sCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "k8s",
		Short: "Kubernetes manifests for running servebench's shards on many machines",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(newK8sJobCmd())
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
		Use:   "job --shards N --image IMAGE [flags] -- [run flags]",
		Short: "Print an Indexed Job that runs one workload as N synchronized shards",
		Long: `k8s job prints, on stdout, a Kubernetes Indexed Job (batch/v1) whose N pods each run
'servebench run [run flags] --shard K/N --start-at T': the same seeded workload, pod K sending
its slice, all starting at T (--start-delay from now). Each pod writes its results directory
to /results/shard-K: on the PersistentVolumeClaim --results-claim names, or an emptyDir that
lives as long as the pod (its log keeps the table). With --results-to log no claim is needed:
each pod also prints its results as a checksummed block in its log (run --results-to-log),
and 'servebench merge' reads the saved 'kubectl logs' of every pod. The API key comes from a
Secret (--api-key-secret) into the variable --api-key-env names; it is never in the manifest.`,
		Example: `  servebench k8s job --shards 4 --image registry.example.com/servebench:0.1 \
    --namespace llm --results-claim servebench-results --api-key-secret vllm-key \
    -- --base-url http://vllm.llm:8000 --rate 40 --requests 4000 --stream on | kubectl apply -f -
  servebench k8s job --shards 4 --image registry.example.com/servebench:0.1 --results-to log \
    -- --base-url http://vllm.llm:8000 --rate 40 --requests 4000 --stream on | kubectl apply -f -`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 0 && len(args) > 0 {
				return usageErr(fmt.Errorf("unexpected argument %q: put run flags after --", args[0]))
			}
			if err := checkShardRunArgs(args, &o.JobOptions); err != nil {
				return usageErr(err)
			}
			if o.startDelay <= 0 {
				return usageErr(fmt.Errorf("--start-delay %v: expected a duration > 0 (time for every pod to be scheduled and pull the image)", o.startDelay))
			}
			o.StartAt = time.Now().Add(o.startDelay).Truncate(time.Second)
			job, err := k8s.Job(o.JobOptions)
			if err != nil {
				return usageErr(err)
			}
			return k8s.WriteYAML(cmd.OutOrStdout(), job)
		},
	}
	f := cmd.Flags()
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
	return cmd
}

// checkShardRunArgs parses the run flags as `servebench run` would, so a
// typo fails here and not in N pods, and refuses what the Job sets itself.
// It sets o.RunArgs and o.APIKeyEnv.
func checkShardRunArgs(args []string, o *k8s.JobOptions) error {
	run := newRunCmd()
	fs := run.Flags()
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("run flags: %w", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("run flags: unexpected argument %q", fs.Arg(0))
	}
	for _, name := range []string{"shard", "start-at", "out", "quiet", "results-to-log"} {
		if f := fs.Lookup(name); f != nil && f.Changed {
			return fmt.Errorf("run flags: --%s is set by the Job for each pod (results: k8s job --results-to)", name)
		}
	}
	if f := fs.Lookup("stream"); f != nil && f.Value.String() == "both" {
		return errors.New("run flags: expected --stream on or off: the shards start one run together")
	}
	if !fs.Changed("base-url") {
		return errors.New("run flags: expected --base-url: every shard must load the same server (a bundled engine per pod would not be one)")
	}
	o.RunArgs = args
	o.APIKeyEnv = client.DefaultAPIKeyEnv
	if f := fs.Lookup("api-key-env"); f != nil {
		o.APIKeyEnv = f.Value.String()
	}
	return nil
}
