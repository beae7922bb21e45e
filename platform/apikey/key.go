// Package apikey defines tenant API key values and the forms they are stored in.
//
// A key looks like
//
//	bmk_0aZ9...(30 random base62 characters)...(6 checksum characters)
//
// and is always exactly [Length] (40) characters long, like GitHub's token format:
//
//   - "bmk_" marks the string as one of our keys, so secret scanners can find a
//     leaked key and people can tell at a glance what it is;
//   - 30 characters drawn uniformly from the base62 alphabet with crypto/rand carry
//     30·log2(62) ≈ 178 bits of randomness, well above the 128 docs/api.md requires;
//   - the last 6 characters are the CRC32 (IEEE) of everything before them, in
//     base62 and left-padded with '0', so a mistyped or made-up key is refused by
//     [Parse] without touching the database.
//
// The first [PrefixLength] (12) characters are the key's prefix: stored in clear,
// unique, and used to find the key's row. The rest is never stored in clear; the
// row keeps an HMAC-SHA-256 of the whole key made by a [Hasher], and optionally an
// AES-256-GCM copy made by a [Sealer] for the dashboard's "Show key".
package apikey

import (
	"crypto/rand"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"strings"
)

const (
	// Marker starts every API key.
	Marker = "bmk_"
	// RandomLength is the number of random base62 characters after the marker.
	RandomLength = 30
	// ChecksumLength is the number of base62 characters of the trailing CRC32.
	// 62^6 > 2^32, so every checksum fits.
	ChecksumLength = 6
	// Length is the exact length of every API key: marker, random part, checksum.
	Length = len(Marker) + RandomLength + ChecksumLength
	// PrefixLength is the length of the key's prefix: the marker and the first
	// 8 random characters (≈ 47.6 bits), enough for a unique lookup column. The
	// caller regenerates the key in the rare case the unique index refuses it.
	PrefixLength = 12
)

// alphabet is the base62 alphabet, in the order used for the checksum encoding.
const alphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ErrMalformed is returned by [Parse] for a string that cannot be an API key:
// wrong marker, wrong length, a character outside base62, or a wrong checksum.
var ErrMalformed = errors.New("apikey: malformed API key")

// Key is a freshly generated API key.
type Key struct {
	// Plain is the full key. It is shown to the user once and never stored or
	// logged in clear.
	Plain string
	// Prefix is the first PrefixLength characters of Plain, stored in clear and
	// used to find the key's row.
	Prefix string
}

// String returns the prefix followed by an ellipsis, so that printing a Key by
// mistake does not leak it. Use the Plain field for the real value.
func (k Key) String() string { return k.Prefix + "…" }

// LogValue implements slog.LogValuer and logs only the prefix.
func (k Key) LogValue() slog.Value { return slog.StringValue(k.String()) }

// Generate returns a new random API key.
func Generate() (Key, error) {
	return generate(rand.Reader)
}

// generate builds a key from the randomness in r. Characters are drawn by
// rejection sampling so that every base62 character is equally likely.
func generate(r io.Reader) (Key, error) {
	var b strings.Builder
	b.Grow(Length)
	b.WriteString(Marker)

	// 248 = 4·62: bytes below it map onto the alphabet without bias.
	const limit = 4 * len(alphabet)
	buf := make([]byte, RandomLength+RandomLength/2)
	for n := 0; n < RandomLength; {
		if _, err := io.ReadFull(r, buf); err != nil {
			return Key{}, fmt.Errorf("apikey: reading randomness: %w", err)
		}
		for _, c := range buf {
			if int(c) >= limit {
				continue
			}
			b.WriteByte(alphabet[int(c)%len(alphabet)])
			n++
			if n == RandomLength {
				break
			}
		}
	}

	body := b.String()
	plain := body + encodeChecksum(crc32.ChecksumIEEE([]byte(body)))
	return Key{Plain: plain, Prefix: plain[:PrefixLength]}, nil
}

// Parse checks that s is a well-formed API key (marker, exact length, base62
// alphabet, checksum) and returns its prefix. It does no I/O, so a mistyped or
// forged key is refused before any database work. Every failure wraps
// [ErrMalformed]; the error never contains the key itself.
func Parse(s string) (prefix string, err error) {
	if !strings.HasPrefix(s, Marker) {
		return "", fmt.Errorf("%w: missing %q marker", ErrMalformed, Marker)
	}
	if len(s) != Length {
		return "", fmt.Errorf("%w: length %d, want %d", ErrMalformed, len(s), Length)
	}
	for i := len(Marker); i < len(s); i++ {
		if indexOf(s[i]) < 0 {
			return "", fmt.Errorf("%w: character at position %d is not base62", ErrMalformed, i)
		}
	}
	body, sum := s[:Length-ChecksumLength], s[Length-ChecksumLength:]
	if decodeChecksum(sum) != uint64(crc32.ChecksumIEEE([]byte(body))) {
		return "", fmt.Errorf("%w: checksum mismatch", ErrMalformed)
	}
	return s[:PrefixLength], nil
}

// encodeChecksum writes v in base62, left-padded with '0' to ChecksumLength.
func encodeChecksum(v uint32) string {
	var out [ChecksumLength]byte
	n := uint64(v)
	for i := ChecksumLength - 1; i >= 0; i-- {
		out[i] = alphabet[n%uint64(len(alphabet))]
		n /= uint64(len(alphabet))
	}
	return string(out[:])
}

// decodeChecksum reads a ChecksumLength base62 string whose characters have
// already been checked. The result may exceed 2^32 for strings that no
// encodeChecksum call produces; such values never match a CRC32.
func decodeChecksum(s string) uint64 {
	var n uint64
	for i := 0; i < len(s); i++ {
		n = n*uint64(len(alphabet)) + uint64(indexOf(s[i]))
	}
	return n
}

// indexOf returns the value of the base62 digit c, or -1 if c is not one.
func indexOf(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'Z':
		return int(c-'A') + 10
	case c >= 'a' && c <= 'z':
		return int(c-'a') + 36
	default:
		return -1
	}
}
