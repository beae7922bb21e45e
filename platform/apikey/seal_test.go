package apikey

import (
	"bytes"
	"errors"
	"testing"
)

func TestNewSealer(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		key     []byte
		wantErr bool
	}{
		{"nil", nil, true},
		{"16 bytes (AES-128)", make([]byte, 16), true},
		{"31 bytes", make([]byte, 31), true},
		{"33 bytes", make([]byte, 33), true},
		{"32 bytes", make([]byte, 32), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := NewSealer(tt.key)
			if tt.wantErr {
				if !errors.Is(err, ErrSealKey) || s != nil {
					t.Fatalf("NewSealer = %v, %v; want nil, ErrSealKey", s, err)
				}
				return
			}
			if err != nil || s == nil {
				t.Fatalf("NewSealer = %v, %v", s, err)
			}
		})
	}
}

func TestSealer(t *testing.T) {
	t.Parallel()

	s, err := NewSealer(bytes.Repeat([]byte{1}, SealKeyLength))
	if err != nil {
		t.Fatalf("NewSealer: %v", err)
	}
	other, err := NewSealer(bytes.Repeat([]byte{2}, SealKeyLength))
	if err != nil {
		t.Fatalf("NewSealer: %v", err)
	}
	k, err := Generate()
	if err != nil {
		t.Fatalf("Generate: %v", err)
	}
	aad := []byte("api_keys:" + k.Prefix)

	sealed, err := s.Seal(k.Plain, aad)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	if want := nonceLength + len(k.Plain) + 16; len(sealed) != want {
		t.Fatalf("len(sealed) = %d, want %d", len(sealed), want)
	}
	if bytes.Contains(sealed, []byte(k.Plain[len(Marker):])) {
		t.Fatal("sealed value contains the key in clear")
	}
	again, err := s.Seal(k.Plain, aad)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	if bytes.Equal(sealed[:nonceLength], again[:nonceLength]) {
		t.Fatal("two seals used the same nonce")
	}

	flip := func(i int) []byte {
		b := bytes.Clone(sealed)
		b[i] ^= 0x01
		return b
	}

	tests := []struct {
		name    string
		s       *Sealer
		sealed  []byte
		aad     []byte
		wantErr bool
	}{
		{"roundtrip", s, sealed, aad, false},
		{"second seal opens too", s, again, aad, false},
		{"wrong aad", s, sealed, []byte("api_keys:bmk_00000000"), true},
		{"nil aad", s, sealed, nil, true},
		{"other key", other, sealed, aad, true},
		{"tampered nonce", s, flip(0), aad, true},
		{"tampered ciphertext", s, flip(nonceLength + 3), aad, true},
		{"tampered tag", s, flip(len(sealed) - 1), aad, true},
		{"truncated", s, sealed[:len(sealed)-1], aad, true},
		{"shorter than overhead", s, sealed[:nonceLength], aad, true},
		{"empty", s, nil, aad, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := tt.s.Open(tt.sealed, tt.aad)
			if tt.wantErr {
				if !errors.Is(err, ErrOpen) || got != "" {
					t.Fatalf("Open = %q, %v; want \"\", ErrOpen", got, err)
				}
				return
			}
			if err != nil || got != k.Plain {
				t.Fatalf("Open = %q, %v; want %q", got, err, k.Plain)
			}
		})
	}
}
