package main

import (
	"strings"

	"github.com/spf13/cobra"

	"github.com/servebench/servebench/engine/option"
)

// fieldFlags is the one table from a library option's field
// (option.FieldError: bench, engine and report packages) to the
// flags that set it, without their dashes. Where two commands set the same
// field under different flags, the first one the running command takes is
// used. TestFieldFlags checks that every field the libraries name has a row.
var fieldFlags = map[string][]string{
	// engine/sim.Options and engine/pd.Options: servebench engine's flags.
	"AcceptanceRate":       {"acceptance-rate"},
	"AutoToolCallRate":     {"auto-tool-call-rate"},
	"Decode":               {"decode", "pd-decode"},
	"EnableAutoToolChoice": {"enable-auto-tool-choice"},
	"GPUMemoryUtilization": {"gpu-memory-utilization"},
	"HealthDuringLoad":     {"health-during-load"},
	"Host":                 {"host"},
	"KVAllocation":         {"kv-allocation"},
	"KVLinkGbps":           {"kv-link-gbps"},
	"KVRole":               {"kv-role"},
	"LoRAModules":          {"lora-modules"},
	"MaxLoRARank":          {"max-lora-rank"},
	"MaxLoRAs":             {"max-loras"},
	"MaxModelLen":          {"max-model-len"},
	"MaxNumBatchedTokens":  {"max-num-batched-tokens"},
	"MaxNumSeqs":           {"max-num-seqs"},
	"NumGPUBlocksOverride": {"num-gpu-blocks-override"},
	"PipelineParallelSize": {"pipeline-parallel-size"},
	"Port":                 {"port"},
	"Prefill":              {"prefill", "pd-prefill"},
	"ReasoningField":       {"reasoning-field"},
	"ReasoningParser":      {"reasoning-parser"},
	"ReasoningTokens":      {"reasoning-tokens"},
	"SpeculativeTokens":    {"speculative-tokens"},
	"Speedup":              {"speedup"},
	"StartupSpeedup":       {"startup-speedup"},
	"TensorParallelSize":   {"tensor-parallel-size"},
	"ToolCallParser":       {"tool-call-parser"},

	// bench/workload: Workload, SourceOptions, StructuredOptions, the LoRA mix.
	"Arrival":            {"arrival"},
	"Burstiness":         {"burstiness"},
	"Concurrency":        {"concurrency"},
	"Dataset":            {"dataset"},
	"Duration":           {"duration"},
	"InputTokens":        {"input-tokens"},
	"LoRA":               {"lora"},
	"LoRADist":           {"lora-dist"},
	"OutputTokens":       {"output-tokens"},
	"PrefixGroups":       {"prefix-groups"},
	"PrefixPick":         {"prefix-pick"},
	"Prompt":             {"prompt"},
	"PromptFile":         {"prompt-file"},
	"PromptTokens":       {"prompt-tokens"},
	"Rate":               {"rate"},
	"Requests":           {"requests"},
	"ResponseFormat":     {"response-format"},
	"SharedPrefixTokens": {"shared-prefix-tokens"},
	"ThinkTime":          {"think-time"},
	"ToolChoice":         {"tool-choice"},
	"ToolsFile":          {"tools"},
	"Trace":              {"trace"},
	"TraceFormat":        {"trace-format"},
	"TraceSpeed":         {"trace-speed"},
	"TraceWindow":        {"trace-window"},
	"Turns":              {"turns"},
	"Warmup":             {"warmup"},

	// bench: Config, ServerOptions, RunSpec and its Request, Sweep, Shard,
	// MaxRateSearch.
	"BaseURL":              {"base-url"},
	"Clock":                {"clock"},
	"Concurrencies":        {"concurrency"},
	"ContinueOnServerExit": {"continue-on-server-exit"},
	"Dir":                  {"out"},
	"DirectURL":            {"direct-url"},
	"Endpoint":             {"endpoint"},
	"EngineArgs":           {"engine-arg"},
	"GGUF":                 {"gguf"},
	"GPU":                  {"gpu"},
	"GaugeEvery":           {"gauge-interval"},
	"Interval":             {"interval"},
	"LevelGap":             {"level-gap"},
	"MaxErrorRate":         {"max-error-rate"},
	"MaxP99E2E":            {"max-p99-e2e"},
	"MaxSteps":             {"max-steps"},
	"MaxTokens":            {"max-tokens"},
	"Model":                {"model"},
	"OllamaModels":         {"ollama-models"},
	"Preset":               {"server"},
	"Prometheus":           {"prometheus-url"},
	"Rates":                {"rate"},
	"RequestTimeout":       {"request-timeout"},
	"Retries":              {"retries"},
	"SLO":                  {"slo"},
	"Search":               {"find-max-rate"},
	"ServeModel":           {"model"},
	"ServerCmd":            {"server-cmd"},
	"Shard":                {"shard"},
	"StallTimeout":         {"stall-timeout"},
	"Start":                {"rate"},
	"StartAt":              {"start-at"},
	"Target":               {"find-max-rate"},
	"ToolRounds":           {"tool-rounds"},

	// bench/tune.Options and its Grid (one list of factors a kind).
	"EngineGrid":   {"engine-grid"},
	"EnvGrid":      {"env-grid"},
	"GPUHourPrice": {"gpu-hour-price"},
	"GPUs":         {"gpus"},
	"Grid":         {"grid"},
	"Repeats":      {"repeats"},
	"Resume":       {"resume"},
	"Seed":         {"seed"},

	// bench/fleet.MergeOptions and bench/fleet/k8s.JobOptions.
	"APIKeyEnv":       {"api-key-env"},
	"APIKeySecret":    {"api-key-secret"},
	"APIKeySecretKey": {"api-key-secret-key"},
	"CPU":             {"cpu"},
	"Command":         {"command"},
	"DataClaim":       {"data-claim"},
	"DataConfigMap":   {"data-configmap"},
	"Image":           {"image"},
	"Memory":          {"memory"},
	"Name":            {"name"},
	"Namespace":       {"namespace"},
	"Out":             {"out"},
	"ResultsClaim":    {"results-claim"},
	"ResultsTo":       {"results-to"},
	"ServiceAccount":  {"service-account"},
	"Shards":          {"shards"},

	// engine/launch.PresetOptions and its OllamaOptions.
	"Bin":    {"server-bin"},
	"Models": {"ollama-models"},

	// report: compare.Options, export's destination, pushgateway.Options.
	"Append":     {"append"},
	"Format":     {"format"},
	"Job":        {"push-job"},
	"Labels":     {"push-label"},
	"Run":        {"run"},
	"Test":       {"test"},
	"Thresholds": {"max-regression"},
	"To":         {"to"},
	"URL":        {"pushgateway"},
}

// flagFor is the flag that sets field on cmd ("--retries"), or the field
// itself when no flag does.
func flagFor(cmd *cobra.Command, field string) string {
	names := fieldFlags[field]
	if len(names) == 0 {
		return field
	}
	for _, n := range names {
		if cmd != nil && cmd.Flag(n) != nil {
			return "--" + n
		}
	}
	return "--" + names[0]
}

// flagText is err's message with the libraries' option errors naming the
// flags of cmd (the command that ran) instead of their fields.
func flagText(cmd *cobra.Command, err error) string {
	msg := err.Error()
	name := func(f string) string { return flagFor(cmd, f) }
	for _, fe := range fieldErrors(err, nil) {
		msg = strings.ReplaceAll(msg, fe.Error(), fe.Text(name))
	}
	return msg
}

// fieldErrors appends every option.FieldError in err's tree to out,
// outermost first, so that one wrapping another is rewritten before it.
func fieldErrors(err error, out []*option.FieldError) []*option.FieldError {
	if err == nil {
		return out
	}
	if fe, ok := err.(*option.FieldError); ok {
		out = append(out, fe)
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		out = fieldErrors(u.Unwrap(), out)
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			out = fieldErrors(e, out)
		}
	}
	return out
}
