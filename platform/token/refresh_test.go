package token

import (
	"bytes"
	"crypto/sha256"
	"strings"
	"testing"
)

func TestNewRefresh(t *testing.T) {
	t.Parallel()

	seen := make(map[string]bool)
	for range 1000 {
		plain, hash, err := NewRefresh()
		if err != nil {
			t.Fatalf("NewRefresh: %v", err)
		}
		if len(plain) != RefreshLength || !strings.HasPrefix(plain, RefreshMarker) {
			t.Fatalf("refresh token %q has the wrong shape", plain)
		}
		if !ValidRefresh(plain) {
			t.Fatalf("ValidRefresh(%q) = false", plain)
		}
		sum := sha256.Sum256([]byte(plain))
		if !bytes.Equal(hash, sum[:]) || !bytes.Equal(HashRefresh(plain), hash) {
			t.Fatalf("hash of %q is not its SHA-256", plain)
		}
		if seen[plain] {
			t.Fatalf("duplicate refresh token %q", plain)
		}
		seen[plain] = true
	}
}

func TestNewRefreshReadError(t *testing.T) {
	t.Parallel()

	if _, _, err := newRefresh(bytes.NewReader(make([]byte, 5))); err == nil {
		t.Fatal("newRefresh with a short reader: want error")
	}
}

func TestValidRefresh(t *testing.T) {
	t.Parallel()

	good, _, err := newRefresh(bytes.NewReader(bytes.Repeat([]byte{0xfb}, 32)))
	if err != nil {
		t.Fatalf("newRefresh: %v", err)
	}
	body := good[len(RefreshMarker):]

	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"good", good, true},
		{"empty", "", false},
		{"marker only", RefreshMarker, false},
		{"API key marker", "bmk_" + body, false},
		{"too short", good[:len(good)-1], false},
		{"too long", good + "A", false},
		{"standard base64 alphabet", RefreshMarker + strings.ReplaceAll(strings.ReplaceAll(body, "-", "+"), "_", "/"), false},
		{"padding", RefreshMarker + body[:len(body)-1] + "=", false},
		{"non-zero trailing bits", RefreshMarker + body[:len(body)-1] + "_", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := ValidRefresh(tt.in); got != tt.want {
				t.Fatalf("ValidRefresh(%q) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}
