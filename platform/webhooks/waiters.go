package webhooks

import "sync"

// waiters is a registry, per key, of the deliveries of this process that
// wait on something of that key, and of what they wait on (V: the
// endpoint's places, the channel closed at a key's next record). A key's
// value is made when its first delivery joins and dropped when its last
// one leaves, so the registry holds only the keys being waited on. It is
// safe for concurrent use.
type waiters[K comparable, V any] struct {
	newValue func() V

	mu      sync.Mutex
	entries map[K]*waiting[V]
}

// waiting is one key's value and how many deliveries hold it.
type waiting[V any] struct {
	v     V
	users int
}

func newWaiters[K comparable, V any](newValue func() V) *waiters[K, V] {
	return &waiters[K, V]{newValue: newValue, entries: map[K]*waiting[V]{}}
}

// join returns k's value, made if k has none, and the function to call
// once when no longer waiting. It refuses (ok false) when limit deliveries
// hold k's value already.
func (w *waiters[K, V]) join(k K, limit int) (v V, leave func(), ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entries[k]
	if e == nil {
		e = &waiting[V]{v: w.newValue()}
		w.entries[k] = e
	}
	if e.users >= limit {
		return v, nil, false
	}
	e.users++
	return e.v, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if e.users--; e.users == 0 && w.entries[k] == e {
			delete(w.entries, k)
		}
	}, true
}

// detach removes k's value, if any, and returns it: the deliveries that
// hold it keep it, the next to join gets a new one.
func (w *waiters[K, V]) detach(k K) (v V, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	e := w.entries[k]
	if e == nil {
		return v, false
	}
	delete(w.entries, k)
	return e.v, true
}

// len is how many keys are waited on.
func (w *waiters[K, V]) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.entries)
}
