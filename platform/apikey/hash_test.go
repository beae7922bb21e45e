package apikey

import (
	"bytes"
	"errors"
	"testing"
)

func testPepper(b byte) []byte { return bytes.Repeat([]byte{b}, MinPepperLength) }

func TestNewHasher(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		pepper  []byte
		wantErr bool
	}{
		{"nil", nil, true},
		{"31 bytes", make([]byte, MinPepperLength-1), true},
		{"32 bytes", make([]byte, MinPepperLength), false},
		{"64 bytes", make([]byte, 64), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, err := NewHasher(tt.pepper)
			if tt.wantErr {
				if !errors.Is(err, ErrShortPepper) || h != nil {
					t.Fatalf("NewHasher = %v, %v; want nil, ErrShortPepper", h, err)
				}
				return
			}
			if err != nil || h == nil {
				t.Fatalf("NewHasher = %v, %v", h, err)
			}
		})
	}
}

func TestHasher(t *testing.T) {
	t.Parallel()

	pepper := testPepper('p')
	h, err := NewHasher(pepper)
	if err != nil {
		t.Fatalf("NewHasher: %v", err)
	}
	other, err := NewHasher(testPepper('q'))
	if err != nil {
		t.Fatalf("NewHasher: %v", err)
	}
	k, err := Generate()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	k2, err := Generate()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	sum := h.Hash(k.Plain)

	// The pepper is copied: changing the caller's slice changes nothing.
	pepper[0] = 'x'

	tamperedSum := bytes.Clone(sum)
	tamperedSum[len(tamperedSum)-1] ^= 1

	tests := []struct {
		name  string
		h     *Hasher
		plain string
		hash  []byte
		want  bool
	}{
		{"same key", h, k.Plain, sum, true},
		{"hash is deterministic", h, k.Plain, h.Hash(k.Plain), true},
		{"other key", h, k2.Plain, sum, false},
		{"other pepper", other, k.Plain, sum, false},
		{"tampered hash", h, k.Plain, tamperedSum, false},
		{"truncated hash", h, k.Plain, sum[:16], false},
		{"nil hash", h, k.Plain, nil, false},
		{"empty plain", h, "", sum, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.h.Verify(tt.plain, tt.hash); got != tt.want {
				t.Fatalf("Verify = %v, want %v", got, tt.want)
			}
		})
	}

	if len(sum) != 32 {
		t.Fatalf("len(Hash) = %d, want 32", len(sum))
	}
	if bytes.Equal(sum, other.Hash(k.Plain)) {
		t.Fatal("different peppers gave the same hash")
	}
}
