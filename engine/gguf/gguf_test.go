package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestRoundTrip writes metadata of every kind Write takes and tensors of
// odd sizes (so the data needs padding), and reads them all back.
func TestRoundTrip(t *testing.T) {
	kvs := []KV{
		{"general.architecture", "llama"},
		{"llama.block_count", uint32(2)},
		{"tokenizer.ggml.bos_token_id", int32(1)},
		{"big", uint64(1) << 40},
		{"eps", float32(1e-5)},
		{"tokenizer.ggml.add_bos_token", true},
		{"off", false},
		{"tokenizer.ggml.tokens", []string{"<unk>", "<s>", "▁the"}},
		{"tokenizer.ggml.scores", []float32{0, 0, -1.5}},
		{"tokenizer.ggml.token_type", []int32{2, 3, 1}},
	}
	tensors := []Tensor{
		{Name: "a", Dims: []uint64{3}, Type: F32, Data: F32Bytes([]float32{1, 2, 3})},
		{Name: "b.weight", Dims: []uint64{5, 2}, Type: F32, Data: F32Bytes([]float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10})},
		{Name: "h", Dims: []uint64{3}, Type: F16, Data: []byte{0, 0x3c, 0, 0x40, 0, 0x42}},
	}
	var buf bytes.Buffer
	if err := Write(&buf, kvs, tensors); err != nil {
		t.Fatal(err)
	}
	if buf.Len()%Alignment != 0 {
		t.Errorf("file is %d bytes: not a multiple of the alignment %d", buf.Len(), Alignment)
	}
	f, err := Read(bytes.NewReader(buf.Bytes()), true)
	if err != nil {
		t.Fatal(err)
	}
	if f.Version != Version {
		t.Errorf("version %d, want %d", f.Version, Version)
	}
	if !reflect.DeepEqual(f.KV, kvs) {
		t.Errorf("key-values:\n got %#v\nwant %#v", f.KV, kvs)
	}
	if !reflect.DeepEqual(f.Tensors, tensors) {
		t.Errorf("tensors:\n got %#v\nwant %#v", f.Tensors, tensors)
	}
	for i, off := range f.Offsets {
		if off%Alignment != 0 {
			t.Errorf("tensor %q at offset %d: not aligned", tensors[i].Name, off)
		}
	}
	if got := f.Get("llama.block_count"); got != uint32(2) {
		t.Errorf("Get(llama.block_count) = %v", got)
	}
}

func TestWriteRefuses(t *testing.T) {
	for _, c := range []struct {
		name string
		kvs  []KV
		ts   []Tensor
	}{
		{"short data", nil, []Tensor{{Name: "x", Dims: []uint64{4}, Type: F32, Data: make([]byte, 12)}}},
		{"unknown type", nil, []Tensor{{Name: "x", Dims: []uint64{1}, Type: 2, Data: make([]byte, 4)}}},
		{"unknown value", []KV{{"k", 1.5}}, nil},
	} {
		if err := Write(&bytes.Buffer{}, c.kvs, c.ts); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
}

func TestCheckFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "m.gguf")
	var buf bytes.Buffer
	if err := Write(&buf, []KV{{"general.architecture", "llama"}}, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(good, buf.Bytes(), 0o644)
	if err := CheckFile(good); err != nil {
		t.Errorf("CheckFile(a GGUF) = %v", err)
	}
	bad := filepath.Join(dir, "notes.txt")
	os.WriteFile(bad, []byte("FROM llama3\n"), 0o644)
	err := CheckFile(bad)
	if !errors.Is(err, ErrNotGGUF) || !bytes.Contains([]byte(err.Error()), []byte(bad)) {
		t.Errorf("CheckFile(a text file) = %v: want ErrNotGGUF naming the file", err)
	}
	if _, err := Read(bytes.NewReader(buf.Bytes()[:20]), false); err == nil {
		t.Error("Read of a truncated header: no error")
	}
}
