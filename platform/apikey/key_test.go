package apikey

import (
	"bytes"
	"errors"
	"hash/crc32"
	"slices"
	"strings"
	"testing"
)

func TestGenerateUniqueAndWellFormed(t *testing.T) {
	t.Parallel()

	const n = 100_000
	seen := make(map[string]struct{}, n)
	for range n {
		k, err := Generate()
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		if len(k.Plain) != Length {
			t.Fatalf("len(%q) = %d, want %d", k.Plain, len(k.Plain), Length)
		}
		if !strings.HasPrefix(k.Plain, Marker) {
			t.Fatalf("%q lacks marker %q", k.Plain, Marker)
		}
		if k.Prefix != k.Plain[:PrefixLength] {
			t.Fatalf("Prefix = %q, want %q", k.Prefix, k.Plain[:PrefixLength])
		}
		prefix, err := Parse(k.Plain)
		if err != nil {
			t.Fatalf("Parse(%q): %v", k.Plain, err)
		}
		if prefix != k.Prefix {
			t.Fatalf("Parse prefix = %q, want %q", prefix, k.Prefix)
		}
		if _, dup := seen[k.Plain]; dup {
			t.Fatalf("duplicate key %q", k.Plain)
		}
		seen[k.Plain] = struct{}{}
	}
}

func TestGenerateUsesWholeAlphabet(t *testing.T) {
	t.Parallel()

	// Over 2,000 keys (60,000 random characters) every base62 character should
	// appear, and none of them far more often than the others.
	counts := make(map[rune]int)
	for range 2000 {
		k, err := Generate()
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		for _, c := range k.Plain[len(Marker) : Length-ChecksumLength] {
			counts[c]++
		}
	}
	if len(counts) != len(alphabet) {
		t.Fatalf("saw %d distinct characters, want %d", len(counts), len(alphabet))
	}
	for c, n := range counts {
		// Expected ≈ 968 each; a character outside 700..1250 means bias.
		if n < 700 || n > 1250 {
			t.Errorf("character %q appeared %d times", c, n)
		}
	}
}

func TestGenerateReadError(t *testing.T) {
	t.Parallel()

	if _, err := generate(bytes.NewReader(make([]byte, 3))); err == nil {
		t.Fatal("generate with a short reader: want error")
	}
}

func TestKeyStringRedacts(t *testing.T) {
	t.Parallel()

	k, err := Generate()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	if s := k.String(); strings.Contains(s, k.Plain) || !strings.HasPrefix(s, k.Prefix) {
		t.Fatalf("String() = %q leaks or loses the prefix", s)
	}
	if s := k.LogValue().String(); strings.Contains(s, k.Plain) {
		t.Fatalf("LogValue() = %q leaks the key", s)
	}
}

func TestChecksumEncoding(t *testing.T) {
	t.Parallel()

	tests := []struct {
		v    uint32
		want string
	}{
		{0, "000000"},
		{1, "000001"},
		{61, "00000z"},
		{62, "000010"},
		{^uint32(0), "4gfFC3"},
	}
	for _, tt := range tests {
		if got := encodeChecksum(tt.v); got != tt.want {
			t.Errorf("encodeChecksum(%d) = %q, want %q", tt.v, got, tt.want)
		}
		if got := decodeChecksum(tt.want); got != uint64(tt.v) {
			t.Errorf("decodeChecksum(%q) = %d, want %d", tt.want, got, tt.v)
		}
	}
}

// withChecksum builds a key string from a body, appending its correct checksum.
func withChecksum(body string) string {
	return body + encodeChecksum(crc32.ChecksumIEEE([]byte(body)))
}

func TestParseRefuses(t *testing.T) {
	t.Parallel()

	k, err := Generate()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	good := k.Plain
	body := good[:Length-ChecksumLength]

	tests := []struct {
		name string
		in   string
	}{
		{"empty", ""},
		{"marker only", Marker},
		{"wrong marker", "bmx_" + good[len(Marker):]},
		{"upper-case marker", "BMK_" + good[len(Marker):]},
		{"other product marker", withChecksum("ghp_" + body[len(Marker):])},
		{"too short", good[:Length-1]},
		{"too long", good + "0"},
		{"too long with valid checksum", withChecksum(body + "A")},
		{"too short with valid checksum", withChecksum(body[:len(body)-1])},
		{"dash in body", withChecksum(body[:10] + "-" + body[11:])},
		{"underscore in body", withChecksum(body[:20] + "_" + body[21:])},
		{"non-ASCII in body", withChecksum(body[:len(body)-2] + "é")},
		{"space in checksum", good[:Length-1] + " "},
		{"leading space", " " + good[:Length-1]},
		{"trailing newline", good[:Length-1] + "\n"},
		{"checksum all zeros", body + "000000"},
		{"checksum overflowing 32 bits", body + "zzzzzz"},
		{"swapped body characters", swapFirstDifferent(good)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.in == good {
				t.Fatalf("test input equals the valid key")
			}
			if _, err := Parse(tt.in); !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) error = %v, want ErrMalformed", tt.in, err)
			}
		})
	}
}

// swapFirstDifferent swaps the first two adjacent differing characters of the
// key's random part, a common typing slip.
func swapFirstDifferent(s string) string {
	b := []byte(s)
	for i := len(Marker); i < Length-ChecksumLength-1; i++ {
		if b[i] != b[i+1] {
			b[i], b[i+1] = b[i+1], b[i]
			return string(b)
		}
	}
	panic("no two adjacent characters differ")
}

func TestParseRefusesEverySingleCharacterChange(t *testing.T) {
	t.Parallel()

	for range 20 {
		k, err := Generate()
		if err != nil {
			t.Fatalf("Generate: %v", err)
		}
		// Replace each character after the marker, in the body and in the
		// checksum, with every other base62 character.
		for i := len(Marker); i < Length; i++ {
			for j := 0; j < len(alphabet); j++ {
				if alphabet[j] == k.Plain[i] {
					continue
				}
				changed := k.Plain[:i] + string(alphabet[j]) + k.Plain[i+1:]
				if _, err := Parse(changed); !errors.Is(err, ErrMalformed) {
					t.Fatalf("Parse accepted %q (position %d changed from %q)", changed, i, k.Plain[i])
				}
			}
		}
	}
}

func TestParseErrorDoesNotLeakKey(t *testing.T) {
	t.Parallel()

	k, err := Generate()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	body := k.Plain[:Length-ChecksumLength]
	_, err = Parse(body + "000000")
	if err == nil || strings.Contains(err.Error(), body[len(Marker):]) {
		t.Fatalf("error %v should exist and not contain the key", err)
	}
}

func TestScopesSorted(t *testing.T) {
	t.Parallel()

	if !slices.IsSorted(knownScopes) {
		t.Fatalf("knownScopes not sorted: %v", knownScopes)
	}
	got := Scopes()
	got[0] = "mutated"
	if knownScopes[0] == "mutated" {
		t.Fatal("Scopes returned the package's own slice")
	}
}
