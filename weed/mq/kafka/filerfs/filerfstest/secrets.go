package filerfstest

import (
	"context"
	"slices"
	"sync"
)

// Secrets are the filer's key-value store in memory.
type Secrets struct {
	mu     sync.Mutex
	values map[string][]byte
}

// ReadSecret returns the value of name, nil if there is none.
func (s *Secrets) ReadSecret(_ context.Context, name string) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.values[name]), nil
}

// WriteSecret sets the value of name.
func (s *Secrets) WriteSecret(_ context.Context, name string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.values == nil {
		s.values = map[string][]byte{}
	}
	s.values[name] = slices.Clone(value)
	return nil
}
