package token

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"strings"
)

const (
	// RefreshMarker starts every refresh token.
	RefreshMarker = "bmr_"
	// refreshBytes is the amount of randomness in a refresh token.
	refreshBytes = 32
	// RefreshLength is the exact length of a refresh token: the marker and
	// 32 random bytes in unpadded base64url (43 characters).
	RefreshLength = len(RefreshMarker) + 43
)

// NewRefresh returns a new opaque refresh token and the hash to store for it.
//
// The token is "bmr_" followed by 32 bytes (256 bits) from crypto/rand in
// unpadded base64url. Only HashRefresh(plain) is stored; the plain value is
// handed to the client once.
func NewRefresh() (plain string, hash []byte, err error) {
	return newRefresh(rand.Reader)
}

// newRefresh builds a refresh token from the randomness in r.
func newRefresh(r io.Reader) (plain string, hash []byte, err error) {
	b := make([]byte, refreshBytes)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", nil, fmt.Errorf("token: reading randomness: %w", err)
	}
	plain = RefreshMarker + base64.RawURLEncoding.EncodeToString(b)
	return plain, HashRefresh(plain), nil
}

// HashRefresh returns the SHA-256 of a refresh token, the form it is stored and
// looked up in.
//
// A plain hash suffices, with no pepper and no slow password hash: the token
// holds 256 bits of randomness, so a leaked hash cannot be reversed by guessing,
// and an exact-match lookup on the hash column finds the row.
func HashRefresh(plain string) []byte {
	sum := sha256.Sum256([]byte(plain))
	return sum[:]
}

// ValidRefresh reports whether plain has the shape of a refresh token, so a
// request carrying garbage can be refused before any database work.
func ValidRefresh(plain string) bool {
	if len(plain) != RefreshLength || !strings.HasPrefix(plain, RefreshMarker) {
		return false
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(plain[len(RefreshMarker):])
	return err == nil && len(b) == refreshBytes
}
