// Package gguf writes and reads GGUF files, the model format of llama.cpp
// and Ollama, as far as servebench needs: `servebench model tiny` writes a
// small Llama with it, and --gguf checks that a file is one before handing it
// to a server. It sits on the server side of the pipeline and imports nothing
// of servebench's.
//
// The layout follows the GGUF specification (version 3, little endian;
// https://github.com/ggml-org/ggml/blob/master/docs/gguf.md): a header (magic
// "GGUF", version, tensor count, key-value count), the key-values, the
// tensor infos (name, dimensions, type, offset into the data section), then
// the tensor data, each tensor aligned to general.alignment (32 by default).
package gguf

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// Version is the format version Write writes.
const Version = 3

// Alignment is the data alignment Write uses (the specification's default).
const Alignment = 32

// Value types of the key-value section.
const (
	typeUint8   uint32 = 0
	typeInt8    uint32 = 1
	typeUint16  uint32 = 2
	typeInt16   uint32 = 3
	typeUint32  uint32 = 4
	typeInt32   uint32 = 5
	typeFloat32 uint32 = 6
	typeBool    uint32 = 7
	typeString  uint32 = 8
	typeArray   uint32 = 9
	typeUint64  uint32 = 10
	typeInt64   uint32 = 11
	typeFloat64 uint32 = 12
)

// TensorType is a ggml tensor element type.
type TensorType uint32

// The tensor types Write supports.
const (
	F32 TensorType = 0
	F16 TensorType = 1
)

// KV is one metadata entry. Value is one of uint32, int32, uint64, float32,
// bool, string, []string, []float32 or []int32.
type KV struct {
	Key   string
	Value any
}

// Tensor is one tensor. Dims are ggml's: Dims[0] is the fastest-varying
// (a row's length). Data holds the little-endian elements.
type Tensor struct {
	Name string
	Dims []uint64
	Type TensorType
	Data []byte
}

// Elements is the product of the tensor's dimensions.
func (t *Tensor) Elements() uint64 {
	n := uint64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

func (t TensorType) size() (uint64, error) {
	switch t {
	case F32:
		return 4, nil
	case F16:
		return 2, nil
	}
	return 0, fmt.Errorf("tensor type %d: only F32 (0) and F16 (1) are supported", t)
}

// F32Bytes encodes float32 values little-endian, as a Tensor's Data.
func F32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// Write writes a GGUF file holding kvs and tensors, in that order.
func Write(w io.Writer, kvs []KV, tensors []Tensor) error {
	bw := bufio.NewWriter(w)
	e := &encoder{w: bw}
	e.raw([]byte(Magic))
	e.u32(Version)
	e.u64(uint64(len(tensors)))
	e.u64(uint64(len(kvs)))
	for _, kv := range kvs {
		e.str(kv.Key)
		if err := e.value(kv.Value); err != nil {
			return fmt.Errorf("gguf: key %q: %w", kv.Key, err)
		}
	}
	var off uint64
	for i := range tensors {
		t := &tensors[i]
		size, err := t.Type.size()
		if err != nil {
			return fmt.Errorf("gguf: tensor %q: %w", t.Name, err)
		}
		if want := size * t.Elements(); uint64(len(t.Data)) != want {
			return fmt.Errorf("gguf: tensor %q: %d bytes of data, its dimensions %v want %d", t.Name, len(t.Data), t.Dims, want)
		}
		e.str(t.Name)
		e.u32(uint32(len(t.Dims)))
		for _, d := range t.Dims {
			e.u64(d)
		}
		e.u32(uint32(t.Type))
		e.u64(off)
		off = align(off + uint64(len(t.Data)))
	}
	e.pad()
	for i := range tensors {
		e.raw(tensors[i].Data)
		e.pad()
	}
	if e.err != nil {
		return e.err
	}
	return bw.Flush()
}

func align(n uint64) uint64 { return (n + Alignment - 1) / Alignment * Alignment }

type encoder struct {
	w   *bufio.Writer
	n   uint64 // bytes written, for the padding
	err error
	b   [8]byte
}

func (e *encoder) raw(p []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(p)
		e.n += uint64(len(p))
	}
}

func (e *encoder) u32(v uint32) { binary.LittleEndian.PutUint32(e.b[:4], v); e.raw(e.b[:4]) }
func (e *encoder) u64(v uint64) { binary.LittleEndian.PutUint64(e.b[:], v); e.raw(e.b[:]) }
func (e *encoder) str(s string) { e.u64(uint64(len(s))); e.raw([]byte(s)) }
func (e *encoder) pad()         { e.raw(make([]byte, align(e.n)-e.n)) }

func (e *encoder) value(v any) error {
	switch v := v.(type) {
	case uint32:
		e.u32(typeUint32)
		e.u32(v)
	case int32:
		e.u32(typeInt32)
		e.u32(uint32(v))
	case uint64:
		e.u32(typeUint64)
		e.u64(v)
	case float32:
		e.u32(typeFloat32)
		e.u32(math.Float32bits(v))
	case bool:
		e.u32(typeBool)
		if v {
			e.raw([]byte{1})
		} else {
			e.raw([]byte{0})
		}
	case string:
		e.u32(typeString)
		e.str(v)
	case []string:
		e.u32(typeArray)
		e.u32(typeString)
		e.u64(uint64(len(v)))
		for _, s := range v {
			e.str(s)
		}
	case []float32:
		e.u32(typeArray)
		e.u32(typeFloat32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(math.Float32bits(x))
		}
	case []int32:
		e.u32(typeArray)
		e.u32(typeInt32)
		e.u64(uint64(len(v)))
		for _, x := range v {
			e.u32(uint32(x))
		}
	default:
		return fmt.Errorf("value of type %T: not supported", v)
	}
	return nil
}

// ErrNotGGUF is wrapped by Read and CheckFile for input that does not start
// with the GGUF magic.
var ErrNotGGUF = errors.New("not a GGUF file")

// File is what Read parsed: the metadata and the tensor infos (Tensor.Data
// is filled only when the data was read too).
type File struct {
	Version uint32
	KV      []KV
	Tensors []Tensor
	Offsets []uint64 // each tensor's offset into the data section
}

// Get returns the value of key, or nil.
func (f *File) Get(key string) any {
	for _, kv := range f.KV {
		if kv.Key == key {
			return kv.Value
		}
	}
	return nil
}

// Limits on what Read accepts, so a corrupt file fails fast instead of
// asking for gigabytes.
const (
	maxString = 1 << 20
	maxCount  = 1 << 24
	maxDims   = 4
)

// Read parses a GGUF file's header, key-values and tensor infos and, when
// data is true, its tensor data (F32 and F16 tensors only).
func Read(r io.Reader, data bool) (*File, error) {
	d := &decoder{r: bufio.NewReader(r)}
	var magic [4]byte
	d.read(magic[:])
	if d.err != nil || string(magic[:]) != Magic {
		return nil, fmt.Errorf("%w: it starts with %q, not %q", ErrNotGGUF, magic[:], Magic)
	}
	f := &File{Version: d.u32()}
	if d.err == nil && (f.Version < 2 || f.Version > 3) {
		return nil, fmt.Errorf("GGUF version %d: expected 2 or 3", f.Version)
	}
	nt, nkv := d.u64(), d.u64()
	if nt > maxCount || nkv > maxCount {
		return nil, fmt.Errorf("GGUF header: %d tensors, %d keys: too many", nt, nkv)
	}
	for i := uint64(0); i < nkv && d.err == nil; i++ {
		k := d.str()
		f.KV = append(f.KV, KV{Key: k, Value: d.value(d.u32(), 0)})
	}
	for i := uint64(0); i < nt && d.err == nil; i++ {
		t := Tensor{Name: d.str()}
		n := d.u32()
		if n > maxDims {
			return nil, fmt.Errorf("GGUF tensor %q: %d dimensions, at most %d", t.Name, n, maxDims)
		}
		for j := uint32(0); j < n; j++ {
			t.Dims = append(t.Dims, d.u64())
		}
		t.Type = TensorType(d.u32())
		f.Tensors = append(f.Tensors, t)
		f.Offsets = append(f.Offsets, d.u64())
	}
	if d.err != nil {
		return nil, fmt.Errorf("GGUF header: %w", d.err)
	}
	if !data {
		return f, nil
	}
	d.skip(align(d.n) - d.n)
	return f, readData(d, f)
}

// readData reads each tensor's data at its offset from the data section's start.
func readData(d *decoder, f *File) error {
	start := d.n
	for i := range f.Tensors {
		t := &f.Tensors[i]
		size, _ := t.Type.size()
		if f.Offsets[i] < d.n-start {
			return fmt.Errorf("GGUF tensor %q: offset %d overlaps the previous tensor", t.Name, f.Offsets[i])
		}
		d.skip(f.Offsets[i] - (d.n - start))
		n := size * t.Elements()
		if n > 1<<34 {
			return fmt.Errorf("GGUF tensor %q: %d bytes: too large", t.Name, n)
		}
		t.Data = make([]byte, n)
		d.read(t.Data)
		if d.err != nil {
			return fmt.Errorf("GGUF tensor %q: %w", t.Name, d.err)
		}
	}
	return nil
}

// CheckFile reports whether path is a GGUF file (its magic and version), and
// names the file when it is not.
func CheckFile(path string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	var h [8]byte
	if _, err := io.ReadFull(fh, h[:]); err != nil || string(h[:4]) != Magic {
		return fmt.Errorf("%s: %w (it does not start with %q)", path, ErrNotGGUF, Magic)
	}
	if v := binary.LittleEndian.Uint32(h[4:]); v < 2 || v > 3 {
		return fmt.Errorf("%s: GGUF version %d: expected 2 or 3", path, v)
	}
	return nil
}

type decoder struct {
	r   *bufio.Reader
	n   uint64
	err error
	b   [8]byte
}

func (d *decoder) read(p []byte) {
	if d.err != nil {
		return
	}
	var k int
	k, d.err = io.ReadFull(d.r, p)
	d.n += uint64(k)
	if d.err == io.EOF || d.err == io.ErrUnexpectedEOF {
		d.err = fmt.Errorf("truncated at byte %d", d.n)
	}
}

func (d *decoder) skip(n uint64) {
	if d.err == nil && n > 0 {
		var k int64
		k, d.err = io.CopyN(io.Discard, d.r, int64(n))
		d.n += uint64(k)
		if d.err == io.EOF {
			d.err = fmt.Errorf("truncated at byte %d", d.n)
		}
	}
}

func (d *decoder) u8() uint8   { d.read(d.b[:1]); return d.b[0] }
func (d *decoder) u16() uint16 { d.read(d.b[:2]); return binary.LittleEndian.Uint16(d.b[:2]) }
func (d *decoder) u32() uint32 { d.read(d.b[:4]); return binary.LittleEndian.Uint32(d.b[:4]) }
func (d *decoder) u64() uint64 { d.read(d.b[:8]); return binary.LittleEndian.Uint64(d.b[:8]) }

func (d *decoder) str() string {
	n := d.u64()
	if d.err != nil {
		return ""
	}
	if n > maxString {
		d.err = fmt.Errorf("string of %d bytes at byte %d: too long", n, d.n)
		return ""
	}
	p := make([]byte, n)
	d.read(p)
	return string(p)
}

// value reads one value of type t; arrays of strings, float32 and int32 come
// back as the slices Write takes, other arrays as []any.
func (d *decoder) value(t uint32, depth int) any {
	switch t {
	case typeUint8:
		return d.u8()
	case typeInt8:
		return int8(d.u8())
	case typeUint16:
		return d.u16()
	case typeInt16:
		return int16(d.u16())
	case typeUint32:
		return d.u32()
	case typeInt32:
		return int32(d.u32())
	case typeFloat32:
		return math.Float32frombits(d.u32())
	case typeBool:
		return d.u8() != 0
	case typeString:
		return d.str()
	case typeUint64:
		return d.u64()
	case typeInt64:
		return int64(d.u64())
	case typeFloat64:
		return math.Float64frombits(d.u64())
	case typeArray:
		return d.array(depth)
	}
	if d.err == nil {
		d.err = fmt.Errorf("value type %d at byte %d: unknown", t, d.n)
	}
	return nil
}

func (d *decoder) array(depth int) any {
	et, n := d.u32(), d.u64()
	if d.err != nil {
		return nil
	}
	if n > maxCount || depth > 2 {
		d.err = fmt.Errorf("array of %d elements at byte %d: too large or too deep", n, d.n)
		return nil
	}
	switch et {
	case typeString:
		v := make([]string, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			v = append(v, d.str())
		}
		return v
	case typeFloat32:
		v := make([]float32, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			v = append(v, math.Float32frombits(d.u32()))
		}
		return v
	case typeInt32:
		v := make([]int32, 0, n)
		for i := uint64(0); i < n && d.err == nil; i++ {
			v = append(v, int32(d.u32()))
		}
		return v
	}
	v := make([]any, 0, n)
	for i := uint64(0); i < n && d.err == nil; i++ {
		v = append(v, d.value(et, depth+1))
	}
	return v
}
