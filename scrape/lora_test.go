package scrape

import (
	"strings"
	"testing"
)

// TestLoRA: the latest series of vllm:lora_requests_info wins (its value
// is the time vLLM set it), its labels read as lists; absent, nil.
func TestLoRA(t *testing.T) {
	const text = `# HELP vllm:lora_requests_info Running stats on lora requests.
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql,chat",waiting_lora_adapters=""} 1.7e9
vllm:lora_requests_info{max_lora="2",running_lora_adapters="sql",waiting_lora_adapters="chat,math"} 1.7000001e9
vllm:lora_requests_info{max_lora="2",running_lora_adapters="",waiting_lora_adapters=""} 1.6e9
`
	s, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	got := LoRA(s)
	if got == nil || got.MaxLoRA != 2 || strings.Join(got.Running, "|") != "sql" || strings.Join(got.Waiting, "|") != "chat|math" {
		t.Errorf("LoRA = %+v", got)
	}
	empty, _ := Parse(strings.NewReader("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 0\n"))
	if LoRA(empty) != nil {
		t.Error("LoRA found in an exposition without the gauge")
	}
}

// TestReadLoRA: servebench scrape's readout carries the LoRA gauge, in
// text and JSON.
func TestReadLoRA(t *testing.T) {
	const text = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 1
# TYPE vllm:lora_requests_info gauge
vllm:lora_requests_info{max_lora="1",running_lora_adapters="sql",waiting_lora_adapters="chat"} 1.7e9
`
	s, err := Parse(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Read(s, nil, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var tb, jb strings.Builder
	if err := r.WriteText(&tb); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&jb); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(tb.String(), "lora: max_lora 1, running [sql], waiting [chat]") ||
		!strings.Contains(jb.String(), `"max_lora": 1`) {
		t.Errorf("text:\n%s\njson:\n%s", tb.String(), jb.String())
	}
}
