package tok

// citedCounts are real token counts of English prose and code, each with
// where it is published. "Qwen/Qwen-tokenizer" is the Qwen2 tokenizer that
// Qwen2.5 ships unchanged.
var citedCounts = []struct {
	family Family
	kind   string // prose, code, or mixed (code holding CJK text, outside the 5% goal)
	text   string
	want   int
	source string
}{
	{Qwen2, "prose", "Transformers (formerly known as pytorch-transformers and pytorch-pretrained-bert) provides " +
		"general-purpose architectures (BERT, GPT-2, RoBERTa, XLM, DistilBert, XLNet...) for Natural " +
		"Language Understanding (NLU) and Natural Language Generation (NLG) with over 32+ pretrained " +
		"models in 100+ languages and deep interoperability between Jax, PyTorch and TensorFlow.", 90,
		"huggingface/transformers tests/models/qwen2/test_tokenization_qwen2.py test_tokenizer_integration"},
	{Qwen2, "mixed", "```python\ntokenizer = AutoTokenizer.from_pretrained(\"Qwen/Qwen-tokenizer\")\n" +
		"tokenizer(\"世界，你好！\")```", 26,
		"huggingface/transformers tests/models/qwen2/test_tokenization_qwen2.py test_tokenizer_integration"},
	{Llama3, "prose", "This is a test sentence.", 6, "meta-llama/llama3 llama/test_tokenizer.py test_encode"},
	{Llama3, "prose", "This is a response.", 5, "meta-llama/llama3 llama/test_tokenizer.py test_encode_dialog"},
}
