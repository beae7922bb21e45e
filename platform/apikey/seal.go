package apikey

import (
	"crypto/aes"
	"crypto/cipher"
	"errors"
	"fmt"
)

// SealKeyLength is the length of the AES-256 key [NewSealer] takes.
const SealKeyLength = 32

// nonceLength is the length of the random GCM nonce in front of every sealed key.
const nonceLength = 12

var (
	// ErrSealKey is returned by [NewSealer] for a key that is not SealKeyLength bytes.
	ErrSealKey = errors.New("apikey: sealing key must be 32 bytes")
	// ErrOpen is returned by [Sealer.Open] when the ciphertext is truncated,
	// tampered with, sealed under another key, or bound to other AAD.
	ErrOpen = errors.New("apikey: cannot open sealed key")
)

// Sealer keeps an encrypted copy of API keys, for deployments that configure an
// encryption key and want the dashboard to be able to show a key again.
//
// Sealed values are AES-256-GCM: a random 12-byte nonce followed by the
// ciphertext and the 16-byte tag. The additional authenticated data (AAD) binds
// a ciphertext to its place, for example the key's row id or prefix, so a
// sealed value copied onto another row does not open there.
//
// With random nonces, one sealing key must not seal more than 2^32 values; rotate
// it well before that. A Sealer is safe for concurrent use.
type Sealer struct {
	aead cipher.AEAD
}

// NewSealer returns a Sealer using key, which must be SealKeyLength bytes.
// Like crypto/cipher.NewGCM it takes its key alone, not a Config: the key is
// all there is to configure.
func NewSealer(key []byte) (*Sealer, error) {
	if len(key) != SealKeyLength {
		return nil, fmt.Errorf("%w: got %d bytes", ErrSealKey, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("apikey: creating cipher: %w", err)
	}
	// NewGCMWithRandomNonce draws a fresh 12-byte nonce from crypto/rand on
	// every Seal and puts it in front of the ciphertext, which is exactly our
	// storage format.
	aead, err := cipher.NewGCMWithRandomNonce(block)
	if err != nil {
		return nil, fmt.Errorf("apikey: creating GCM: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal encrypts plain, authenticating aad with it, and returns nonce‖ciphertext‖tag
// (len(plain)+28 bytes). The error result exists so that callers handle a future
// failing backend; the standard library's AES-GCM does not fail here.
func (s *Sealer) Seal(plain string, aad []byte) ([]byte, error) {
	return s.aead.Seal(nil, nil, []byte(plain), aad), nil //nolint:gosec // G407: nil nonce, the AEAD draws one per Seal
}

// Open decrypts a value made by Seal with the same aad. Any mismatch returns an
// error wrapping [ErrOpen].
func (s *Sealer) Open(sealed, aad []byte) (string, error) {
	if len(sealed) < s.aead.Overhead() {
		return "", fmt.Errorf("%w: %d bytes is shorter than nonce and tag", ErrOpen, len(sealed))
	}
	plain, err := s.aead.Open(nil, nil, sealed, aad)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrOpen, err)
	}
	return string(plain), nil
}
