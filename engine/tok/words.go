package tok

// Words returns the n most frequent English words of cl100k_base's
// vocabulary: its lowest-ranked tokens (BPE ranks follow pair frequency in
// the training text) that are a space and two or more lowercase ASCII
// letters, without the space, in rank order. Some are common word stems
// ("ing" never qualifies, " de" does): it is a tokenizer's view of English.
// `servebench model tiny` builds its vocabulary from them.
func Words(n int) ([]string, error) {
	v, err := loadCL100k()
	if err != nil {
		return nil, err
	}
	words := make([]string, 0, n)
	for _, b := range v.bytes {
		if len(words) == n {
			break
		}
		if isWord(b) {
			words = append(words, string(b[1:]))
		}
	}
	return words, nil
}

func isWord(b []byte) bool {
	if len(b) < 3 || b[0] != ' ' {
		return false
	}
	for _, c := range b[1:] {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}
