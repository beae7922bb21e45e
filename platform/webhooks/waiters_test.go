package webhooks

import "testing"

// A key's value is shared by the deliveries that join it, up to the limit,
// and dropped when the last one leaves; a detached value stays with its
// holders while the next to join get a new one.
func TestWaiters(t *testing.T) {
	t.Parallel()
	made := 0
	w := newWaiters[string](func() *int { made++; v := made; return &v })

	a, leaveA, okA := w.join("k", 2)
	b, leaveB, okB := w.join("k", 2)
	if !okA || !okB || a != b || made != 1 {
		t.Fatalf("two joins of one key: ok %v %v, same value %v, %d made; want one value shared", okA, okB, a == b, made)
	}
	if _, _, ok := w.join("k", 2); ok {
		t.Fatal("a third join passed a limit of 2")
	}
	other, leaveOther, _ := w.join("other", 2)
	if other == a || w.len() != 2 {
		t.Fatalf("another key shares the value (%v) or %d keys, want 2", other == a, w.len())
	}
	leaveOther()
	leaveA()
	if w.len() != 1 {
		t.Fatalf("%d keys after one of k's holders and other's only one left, want 1", w.len())
	}

	detached, ok := w.detach("k")
	if !ok || detached != a || w.len() != 0 {
		t.Fatalf("detach = %v, %v with %d keys left; want k's value and none", detached == a, ok, w.len())
	}
	next, leaveNext, _ := w.join("k", 2)
	if next == a {
		t.Fatal("a join after detach got the detached value")
	}
	leaveB() // the detached value's last holder: k's new value stays
	if w.len() != 1 {
		t.Fatalf("a detached value's holder leaving dropped the new one (%d keys)", w.len())
	}
	leaveNext()
	if w.len() != 0 {
		t.Fatalf("%d keys after every holder left, want 0", w.len())
	}
	if _, ok := w.detach("k"); ok {
		t.Fatal("detach found a key nobody waits on")
	}
}
