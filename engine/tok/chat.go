package tok

import "strings"

// Message is one chat message: a role ("system", "user", "assistant", ...)
// and its text content.
type Message struct {
	Role, Content string
}

// QwenDefaultSystem is the system prompt Qwen2.5's chat template adds when
// the messages have none.
const QwenDefaultSystem = "You are Qwen, created by Alibaba Cloud. You are a helpful assistant."

// llamaSystemHeader is what Llama-3.1's template writes before the system
// message in every prompt (its date_string default is "26 Jul 2024").
const llamaSystemHeader = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n"

// ApplyChatTemplate renders messages as the model's Hugging Face chat
// template does without tools (Qwen2.5-Instruct's ChatML, Llama-3.1-Instruct's
// header tokens), ending with the assistant's generation prompt when
// addGenerationPrompt is set. Llama's rendering starts with
// <|begin_of_text|>, as its template writes bos_token itself.
func (t *Tokenizer) ApplyChatTemplate(msgs []Message, addGenerationPrompt bool) string {
	var b strings.Builder
	if t.family == Llama3 {
		llamaChat(&b, msgs, addGenerationPrompt)
	} else {
		qwenChat(&b, msgs, addGenerationPrompt)
	}
	return b.String()
}

// qwenChat follows Qwen2.5-Instruct's tokenizer_config.json chat_template:
// a system turn first (the default one if messages[0] is not a system
// message), then every message as <|im_start|>role\ncontent<|im_end|>\n.
func qwenChat(b *strings.Builder, msgs []Message, gen bool) {
	if len(msgs) == 0 || msgs[0].Role != "system" {
		b.WriteString("<|im_start|>system\n" + QwenDefaultSystem + "<|im_end|>\n")
	}
	for _, m := range msgs {
		b.WriteString("<|im_start|>" + m.Role + "\n" + m.Content + "<|im_end|>\n")
	}
	if gen {
		b.WriteString("<|im_start|>assistant\n")
	}
}

// llamaChat follows Llama-3.1-Instruct's chat_template: BOS, a system turn
// that always holds the knowledge-date header (then the system message, if
// messages[0] is one), then each message, trimmed, between header tokens.
func llamaChat(b *strings.Builder, msgs []Message, gen bool) {
	sys := ""
	if len(msgs) > 0 && msgs[0].Role == "system" {
		sys, msgs = strings.TrimSpace(msgs[0].Content), msgs[1:]
	}
	b.WriteString("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" + llamaSystemHeader + sys + "<|eot_id|>")
	for _, m := range msgs {
		b.WriteString("<|start_header_id|>" + m.Role + "<|end_header_id|>\n\n" + strings.TrimSpace(m.Content) + "<|eot_id|>")
	}
	if gen {
		b.WriteString("<|start_header_id|>assistant<|end_header_id|>\n\n")
	}
}

// ChatCount is the prompt token count of a chat: the tokens of its
// template rendering with the generation prompt, as vLLM's
// /v1/chat/completions counts usage.prompt_tokens.
func (t *Tokenizer) ChatCount(msgs []Message) int {
	return t.Count(t.ApplyChatTemplate(msgs, true))
}
