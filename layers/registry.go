package layers

import (
	"fmt"
	"sort"
	"sync"
)

// Registry maps names to factories of one kind of part (likelihoods, input
// models), safe for concurrent use, so users can add parts by name beside
// the built-in ones.
type Registry[F any] struct {
	// Kind names the parts in errors ("likelihood", "input model").
	Kind string
	mu   sync.Mutex
	m    map[string]F
}

// Register adds f under name; a taken name is an error.
func (r *Registry[F]) Register(name string, f F) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.m[name]; ok {
		return fmt.Errorf("%s %q is already registered", r.Kind, name)
	}
	if r.m == nil {
		r.m = map[string]F{}
	}
	r.m[name] = f
	return nil
}

// Names lists the registered names, sorted.
func (r *Registry[F]) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, 0, len(r.m))
	for n := range r.m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the factory registered under name, or an error listing
// the known names.
func (r *Registry[F]) Lookup(name string) (F, error) {
	r.mu.Lock()
	f, ok := r.m[name]
	r.mu.Unlock()
	if !ok {
		return f, fmt.Errorf("unknown %s %q (want one of %v)", r.Kind, name, r.Names())
	}
	return f, nil
}
