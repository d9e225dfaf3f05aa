package tok

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"sync"

	"github.com/pkoukk/tiktoken-go-loader/assets"
)

// vocabFile is tiktoken's cl100k_base rank file, embedded by the
// tiktoken-go-loader module (nothing is downloaded at run time). Llama-3's
// first 100256 tokens are these very tokens with these ids (its 28k extra
// tokens are mostly non-English), and Qwen2's vocabulary was grown from it.
const vocabFile = "cl100k_base.tiktoken"

// vocabulary is a byte-level BPE vocabulary: a token's id is its rank, and
// lower ranks merge first.
type vocabulary struct {
	ranks map[string]uint32
	bytes [][]byte // by id
	// pairs is the rank of each two-byte token (noRank if none), indexed
	// by the bytes as a uint16: every merge starts from single bytes, and
	// this spares the map lookup of each first pair.
	pairs []uint32
}

var (
	cl100kOnce sync.Once
	cl100k     *vocabulary
	cl100kErr  error
)

// loadCL100k parses the embedded rank file once (~30 ms).
func loadCL100k() (*vocabulary, error) {
	cl100kOnce.Do(func() {
		data, err := assets.Assets.ReadFile(vocabFile)
		if err != nil {
			cl100kErr = fmt.Errorf("tok: reading embedded %s: %w", vocabFile, err)
			return
		}
		cl100k, cl100kErr = parseRanks(data)
	})
	return cl100k, cl100kErr
}

// parseRanks reads tiktoken's format: one "base64(token) rank" per line,
// ranks 0..n-1.
func parseRanks(data []byte) (*vocabulary, error) {
	n := bytes.Count(data, []byte{'\n'}) + 1
	v := &vocabulary{ranks: make(map[string]uint32, n), bytes: make([][]byte, 0, n)}
	for line := 1; len(data) > 0; line++ {
		var l []byte
		l, data, _ = bytes.Cut(data, []byte{'\n'})
		if len(l) == 0 {
			continue
		}
		tokB64, rankS, ok := bytes.Cut(l, []byte{' '})
		tokb := make([]byte, base64.StdEncoding.DecodedLen(len(tokB64)))
		nb, err := base64.StdEncoding.Decode(tokb, tokB64)
		rank, err2 := strconv.Atoi(string(rankS))
		if !ok || err != nil || err2 != nil || rank != len(v.bytes) {
			return nil, fmt.Errorf("tok: %s line %d: want \"base64 %d\", got %q", vocabFile, line, len(v.bytes), l)
		}
		tokb = tokb[:nb]
		v.bytes = append(v.bytes, tokb)
		v.ranks[string(tokb)] = uint32(rank)
	}
	v.pairs = make([]uint32, 1<<16)
	for i := range v.pairs {
		v.pairs[i] = noRank
		if r, ok := v.ranks[string([]byte{byte(i >> 8), byte(i)})]; ok {
			v.pairs[i] = r
		}
	}
	return v, nil
}

// maxPiece bounds the length a BPE merge loop works on at once: merging is
// quadratic in the piece's length, and a piece this long (a run of one
// letter, symbol or space) is cut into maxPiece-byte parts first. Real BPE
// merges rarely cross such a cut, and only in text no prose has.
const maxPiece = 256

// noRank marks a pair that is not in the vocabulary.
const noRank = math.MaxUint32

// encodePiece appends the ids of one pre-tokenized piece to out.
func (v *vocabulary) encodePiece(p string, out []uint32) []uint32 {
	if id, ok := v.ranks[p]; ok { // most words are one token
		return append(out, id)
	}
	for len(p) > maxPiece {
		cut := maxPiece
		for cut > 0 && p[cut]&0xC0 == 0x80 { // keep UTF-8 sequences whole
			cut--
		}
		if cut == 0 {
			cut = maxPiece
		}
		out = v.merge(p[:cut], out)
		p = p[cut:]
	}
	return v.merge(p, out)
}

// merge runs tiktoken's byte-pair merge on p: start from single bytes and
// repeatedly join the adjacent pair whose joined bytes have the lowest rank.
func (v *vocabulary) merge(p string, out []uint32) []uint32 {
	var startsBuf [maxPiece + 1]int
	var rankBuf [maxPiece + 1]uint32
	n := len(p)
	starts, ranks := startsBuf[:n+1], rankBuf[:n+1]
	for i := range starts {
		starts[i] = i
	}
	// ranks[i] is the rank of parts i and i+1 joined.
	pair := func(i int) uint32 {
		if i+2 >= len(starts) {
			return noRank
		}
		if r, ok := v.ranks[p[starts[i]:starts[i+2]]]; ok {
			return r
		}
		return noRank
	}
	for i := 0; i+1 < n; i++ {
		ranks[i] = v.pairs[uint16(p[i])<<8|uint16(p[i+1])]
	}
	ranks[n-1], ranks[n] = noRank, noRank
	for len(starts) > 2 {
		best, at := uint32(noRank), -1
		for i, r := range ranks[:len(starts)-2] {
			if r < best {
				best, at = r, i
			}
		}
		if at < 0 {
			break
		}
		starts = append(starts[:at+1], starts[at+2:]...)
		ranks = append(ranks[:at+1], ranks[at+2:]...)
		ranks[at] = pair(at)
		if at > 0 {
			ranks[at-1] = pair(at - 1)
		}
	}
	for i := 0; i+1 < len(starts); i++ {
		// Every single byte is a token, so every part is.
		out = append(out, v.ranks[p[starts[i]:starts[i+1]]])
	}
	return out
}
