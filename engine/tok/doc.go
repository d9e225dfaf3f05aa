// Package tok is the bundled engine's tokenizer: deterministic byte-level
// BPE that counts English prose and code as Qwen2.5's and Llama-3's own
// tokenizers do, plus their chat templates. engine/sim uses it for prompt
// token counts, /tokenize and /detokenize; ids from Encode are what a KV
// cache's block hashes are built from.
//
// Vocabulary: tiktoken's cl100k_base (100256 tokens), embedded by the
// github.com/pkoukk/tiktoken-go-loader module, with a hand-written
// pre-tokenizer for each family (pretok.go). Llama-3's tokenizer is cl100k
// plus 28k mostly non-English tokens, under the same pattern; Qwen2's was
// grown from cl100k and splits numbers into single digits. Measured against
// the models' real tokenizers (TestCitedCounts and TestLlama3ExactIDs print
// each figure beside its source):
//
//   - English prose and code: equal counts on every cited ASCII text
//     (llama.cpp's tokenizer cases for both models, Hugging Face's Qwen2
//     integration sentence, Meta's Llama-3 tests); for Llama-3 the very ids.
//   - Other scripts cost more tokens than the real vocabularies give (CJK
//     and Cyrillic: +4% over llama.cpp's mixed cases for Llama-3, +10% for
//     Qwen2), and Qwen2's NFC normalization is not applied.
//
// Ids: ordinary tokens carry cl100k ids, which are Llama-3's own ids but
// not Qwen2's (Qwen2 numbers its tokens differently); special tokens carry
// each model's real ids (<|im_start|> 151644, <|eot_id|> 128009). Ids are
// stable across runs and builds.
//
// Speed: BenchmarkCount1MB tokenizes 1 MB of prose and code in ~25-35 ms on
// one core (the limit is 100 ms); there is no cache, so a repeated
// text costs the same each time.
//
// Concurrency: a *Tokenizer is immutable and safe for concurrent use. The
// vocabulary is parsed once per process, on the first New (~50 ms).
package tok
