package scrape

import (
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
)

// LoRAFamily is vLLM's LoRA gauge: one series per (max_lora,
// waiting_lora_adapters, running_lora_adapters) label set ever seen, each
// set to the time it was last true (vllm/v1/metrics/loggers.py,
// set_to_current_time), so the series with the largest value is now.
const LoRAFamily = "vllm:lora_requests_info"

// LoRAInfo is what the LoRA gauge says at its latest series: the GPU slots
// (max_lora) and the adapters running and waiting then; At is the
// series' value, the Unix time vLLM set it.
type LoRAInfo struct {
	MaxLoRA int      `json:"max_lora"`
	Running []string `json:"running"`
	Waiting []string `json:"waiting"`
	At      float64  `json:"at"`
}

// LoRA reads the LoRA gauge's latest series from s; nil when s has none
// (no adapters served, or a server without it). Adapter lists are the
// comma-separated label values, empty when none.
func LoRA(s *Snapshot) *LoRAInfo {
	if s == nil {
		return nil
	}
	fam := s.Families[LoRAFamily]
	if fam == nil || fam.GetType() != dto.MetricType_GAUGE {
		return nil
	}
	var best *dto.Metric
	for _, m := range fam.Metric {
		if best == nil || m.GetGauge().GetValue() > best.GetGauge().GetValue() {
			best = m
		}
	}
	if best == nil {
		return nil
	}
	info := &LoRAInfo{At: best.GetGauge().GetValue()}
	max, _ := labelValue(best, "max_lora")
	info.MaxLoRA, _ = strconv.Atoi(max)
	run, _ := labelValue(best, "running_lora_adapters")
	wait, _ := labelValue(best, "waiting_lora_adapters")
	info.Running, info.Waiting = splitList(run), splitList(wait)
	return info
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
