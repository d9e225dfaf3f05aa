package probe

// Get returns the value of evidence key (for the tests), or nil.
func (r *Result) Get(key string) any {
	for _, it := range r.Evidence {
		if it.Key == key {
			return it.Value
		}
	}
	return nil
}
