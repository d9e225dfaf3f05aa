package perf

import (
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// TestData: the embedded records load and pass their checks, and every
// GPU and model the package hands out is one of them.
func TestData(t *testing.T) {
	f, err := parseFacts(dataFS)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(GPUs(), f.gpus) || !reflect.DeepEqual(Models(), f.models) || !reflect.DeepEqual(citedModels(), f.cited) {
		t.Error("GPUs(), Models() or citedModels() differ from data/")
	}
	if len(f.gpus) == 0 || len(f.models) == 0 || len(f.cited) == 0 {
		t.Fatalf("data/ holds %d GPUs, %d models, %d cited-only architectures", len(f.gpus), len(f.models), len(f.cited))
	}
	for _, g := range GPUs() {
		if _, ok := f.archs[g.Arch]; !ok {
			t.Errorf("%s: architecture %q has no record", g.Name, g.Arch)
		}
		if LinkOf(g) != mustFacts().links[g.Interconnect] || LinkOf(g).Name == "" {
			t.Errorf("%s: interconnect %q not found", g.Name, g.Interconnect)
		}
	}
	if _, err := LookupModel("qwen3-0.6b"); err == nil {
		t.Error("a cited-only architecture is served as a profile")
	}
	if _, err := lookupFidelityModel("qwen3-0.6b"); err != nil {
		t.Error(err)
	}
}

// dataFiles is the embedded data as a MapFS, for the tests to break.
func dataFiles(t *testing.T) fstest.MapFS {
	t.Helper()
	m := fstest.MapFS{}
	for _, name := range []string{archsFile, gpusFile, modelsFile, linksFile} {
		b, err := fs.ReadFile(dataFS, name)
		if err != nil {
			t.Fatal(err)
		}
		m[name] = &fstest.MapFile{Data: b}
	}
	return m
}

// TestDataErrors: a broken record fails the load with an error that names
// the file and the field.
func TestDataErrors(t *testing.T) {
	h100 := `"name": "h100-80gb",`
	cases := []struct {
		name, file, old, new string
		want                 []string
	}{
		// The one-place test: a GPU of an architecture data/archs.json
		// has no efficiencies for is refused, not run at defaults.
		{"new arch without efficiencies", gpusFile, `"arch": "gh100"`, `"arch": "gb100"`,
			[]string{gpusFile, `"arch" "gb100": unknown architecture`, archsFile}},
		{"datasheet TFLOP/s", gpusFile, `"dense_tflops": 989,`, `"dense_tflops": 1979,`,
			[]string{gpusFile, "h100-80gb", `"tflops" 989 differs from its datasheet's dense_tflops 1979`}},
		{"datasheet bandwidth", gpusFile, `"bandwidth_gbs": 3350,` + "\n\t\t\t\"source\"", `"bandwidth_gbs": 3000,` + "\n\t\t\t\"source\"",
			[]string{gpusFile, "h100-80gb", `"bandwidth_gbs" 3350 differs`}},
		{"missing field", gpusFile, `"load_gbs": 0.25,`, ``,
			[]string{gpusFile, "record 1", "rtx3060-12gb", `missing "load_gbs"`}},
		{"duplicate GPU", gpusFile, h100, `"name": "H200-141GB",`,
			[]string{gpusFile, "record 7", `"h200-141gb": duplicate name`}},
		{"unknown field", gpusFile, h100, h100 + ` "hbm_stacks": 5,`,
			[]string{gpusFile, `unknown field "hbm_stacks"`}},
		{"unknown interconnect", gpusFile, `"interconnect": "nvlink4"`, `"interconnect": "nvlink5"`,
			[]string{gpusFile, `"interconnect" "nvlink5": unknown`}},
		{"link field", linksFile, `"eager_bus_gbs": 340,`, ``,
			[]string{linksFile, "record 3", "nvlink4", `missing "eager_bus_gbs"`}},
		{"duplicate link", linksFile, `"name": "nvlink3",`, `"name": "pcie4",`,
			[]string{linksFile, "record 2", `"pcie4": duplicate name`}},
		{"arch fields", archsFile, `"flash_attention": 3,`, `"flash_attention": 4,`,
			[]string{archsFile, "gh100", `"flash_attention" 4`}},
		{"duplicate arch", archsFile, `"name": "ga102",`, `"name": "ga106",`,
			[]string{archsFile, "record 2", `"ga106": duplicate name`}},
		{"model field", modelsFile, `"num_key_value_heads": 8,`, ``,
			[]string{modelsFile, `missing "num_key_value_heads"`}},
		{"duplicate served name", modelsFile, `"served_name": "Qwen/Qwen2.5-7B-Instruct",`, `"served_name": "Qwen/Qwen2.5-7B-Instruct-AWQ",`,
			[]string{modelsFile, `"qwen2.5-7b-instruct": "served_name" "Qwen/Qwen2.5-7B-Instruct-AWQ": duplicate name`}},
		{"model source", modelsFile, `"source": "Qwen/Qwen2.5-7B-Instruct config.json: 7,615,616,512 parameters"`, `"source": " "`,
			[]string{modelsFile, "qwen2.5-7b-instruct", `missing "source"`}},
	}
	for _, c := range cases {
		fsys := dataFiles(t)
		s := string(fsys[c.file].Data)
		if !strings.Contains(s, c.old) {
			t.Fatalf("%s: %q not in %s", c.name, c.old, c.file)
		}
		fsys[c.file].Data = []byte(strings.Replace(s, c.old, c.new, 1))
		_, err := parseFacts(fsys)
		if err == nil {
			t.Errorf("%s: loaded", c.name)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.name, err, w)
			}
		}
	}
}

// TestDataOnePlace: a GPU added to data/gpus.json alone, with an
// architecture that has a record, is a profile with its efficiencies,
// interconnect and batching defaults: nothing else needs to learn its name.
func TestDataOnePlace(t *testing.T) {
	fsys := dataFiles(t)
	s := string(fsys[gpusFile].Data)
	i := strings.Index(s, "\t{\n\t\t"+`"name": "h200-141gb"`)
	if i < 0 {
		t.Fatal("no h200-141gb record")
	}
	rec := strings.TrimSuffix(strings.TrimSpace(s[i:]), "]")
	rec = strings.Replace(rec, `"h200-141gb"`, `"h100-94gb-nvl"`, 1)
	rec = strings.Replace(rec, `"NVIDIA H200"`, `"NVIDIA H100 NVL"`, 1)
	fsys[gpusFile].Data = []byte(strings.TrimSpace(s[:len(s)-2]) + ",\n" + rec + "]\n")
	f, err := parseFacts(fsys)
	if err != nil {
		t.Fatal(err)
	}
	g := f.gpus[len(f.gpus)-1]
	if g.Name != "h100-94gb-nvl" || g.Arch != "gh100" {
		t.Fatalf("added record read as %+v", g)
	}
	h, err := LookupGPU("h200-141gb")
	if err != nil {
		t.Fatal(err)
	}
	if EfficiencyFor(g) != EfficiencyFor(h) || LinkOf(g) != LinkOf(h) {
		t.Errorf("a GPU of the H200's architecture and interconnect runs %+v on %+v, the H200 %+v on %+v",
			EfficiencyFor(g), LinkOf(g), EfficiencyFor(h), LinkOf(h))
	}
	if s, b := DefaultBatching(g); s != 1024 || b != 8192 {
		t.Errorf("an H100 NVL's batching defaults %d/%d, want vLLM's 1024/8192", s, b)
	}
}

// BenchmarkLoadData is what the first use of a profile costs a process:
// parsing and checking data/ (go test ./engine/perf -run '^$' -bench LoadData -benchmem).
func BenchmarkLoadData(b *testing.B) {
	for b.Loop() {
		if _, err := parseFacts(dataFS); err != nil {
			b.Fatal(err)
		}
	}
}
