package apikey

import (
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
)

// MinPepperLength is the shortest pepper [NewHasher] accepts.
const MinPepperLength = 32

// ErrShortPepper is returned by [NewHasher] for a pepper under MinPepperLength bytes.
var ErrShortPepper = errors.New("apikey: pepper too short")

// Hasher turns API keys into the keyed hash stored in the database.
//
// The hash is HMAC-SHA-256 under a server-side pepper that lives in the
// configuration, not the database: a stolen table of hashes cannot be checked
// against guesses without the pepper. The keys themselves carry ~178 bits of
// randomness, so a fast keyed hash is enough; no password hashing is needed.
//
// A Hasher is safe for concurrent use.
type Hasher struct {
	pepper []byte
}

// NewHasher returns a Hasher keyed with pepper, which must be at least
// MinPepperLength bytes. The pepper is copied. Like crypto/hmac.New it takes
// its secret alone, not a Config: the secret is all there is to configure.
func NewHasher(pepper []byte) (*Hasher, error) {
	if len(pepper) < MinPepperLength {
		return nil, fmt.Errorf("%w: %d bytes, need at least %d", ErrShortPepper, len(pepper), MinPepperLength)
	}
	return &Hasher{pepper: append([]byte(nil), pepper...)}, nil
}

// Hash returns HMAC-SHA-256(pepper, plain), 32 bytes.
func (h *Hasher) Hash(plain string) []byte {
	m := hmac.New(sha256.New, h.pepper)
	m.Write([]byte(plain))
	return m.Sum(nil)
}

// Verify reports whether hash is the Hash of plain. The comparison takes the
// same time wherever the first difference is.
func (h *Hasher) Verify(plain string, hash []byte) bool {
	return hmac.Equal(h.Hash(plain), hash)
}
