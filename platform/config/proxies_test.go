package config

import (
	"net/netip"
	"slices"
	"strings"
	"testing"
)

func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr []string // parts of the error message; nil: no error
	}{
		{"unset", "", nil, nil},
		{"blank", "   ", nil, nil},
		{"one range", "10.0.0.0/8", []string{"10.0.0.0/8"}, nil},
		{"several with spaces", " 10.0.0.0/8 , 192.168.1.0/24,fd00::/8 ", []string{"10.0.0.0/8", "192.168.1.0/24", "fd00::/8"}, nil},
		{"host bits masked", "10.1.2.3/8", []string{"10.0.0.0/8"}, nil},
		{"single addresses", "127.0.0.1, ::1", []string{"127.0.0.1/32", "::1/128"}, nil},
		{"mapped address", "::ffff:10.0.0.1", []string{"10.0.0.1/32"}, nil},
		{"bad range", "10.0.0/8", nil, []string{`"10.0.0/8" is not a CIDR range`}},
		{"bits too long", "10.0.0.0/33", nil, []string{`"10.0.0.0/33"`}},
		{"word", "localhost", nil, []string{`"localhost" is not a CIDR range`, "or an IP address"}},
		{"empty item", "10.0.0.0/8,,127.0.0.1", nil, []string{"an empty item"}},
		{"trailing comma", "10.0.0.0/8,", nil, []string{"an empty item"}},
		{"zone", "fe80::1%eth0", nil, []string{`"fe80::1%eth0"`}},
		{"every bad item named", "x/1, 10.0.0.0/8, y", nil, []string{`"x/1"`, `"y"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := ParseTrustedProxies(tt.in)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("ParseTrustedProxies(%q) = %v, want an error", tt.in, got)
				}
				for _, part := range tt.wantErr {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q lacks %q", err, part)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTrustedProxies(%q): %v", tt.in, err)
			}
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if !slices.Equal(s, tt.want) {
				t.Fatalf("ParseTrustedProxies(%q) = %v, want %v", tt.in, s, tt.want)
			}
		})
	}
}

func TestLoadTrustedProxies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		value   string
		want    []netip.Prefix
		wantErr string
	}{
		{"default trusts none", "", nil, ""},
		{"ranges", "10.0.0.0/8,127.0.0.1", []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("127.0.0.1/32")}, ""},
		{"bad range named", "10.0.0.0/8,nope", nil, `TRUSTED_PROXIES: "nope" is not a CIDR range`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := Load(env(map[string]string{"TRUSTED_PROXIES": tt.value}))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.TrustedProxies, tt.want) {
				t.Fatalf("TrustedProxies = %v, want %v", c.TrustedProxies, tt.want)
			}
		})
	}
}
