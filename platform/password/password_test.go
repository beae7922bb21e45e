package password

import (
	"encoding/base64"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/argon2"
)

func TestParameters(t *testing.T) {
	t.Parallel()

	// OWASP's argon2id recommendation; lowering any of these weakens every
	// stored password.
	tests := []struct {
		name      string
		got, want int
	}{
		{"memory KiB", MemoryKiB, 19456},
		{"iterations", Iterations, 2},
		{"parallelism", Parallelism, 1},
		{"salt bytes", SaltBytes, 16},
		{"key bytes", KeyBytes, 32},
		{"min length", MinLength, 12},
		{"max bytes", MaxBytes, 1024},
		{"argon2 version", argon2.Version, 19},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.got != tt.want {
				t.Fatalf("%s = %d, want %d", tt.name, tt.got, tt.want)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		plain string
		want  error
	}{
		{"empty", "", ErrTooShort},
		{"11 characters", "abcdefghijk", ErrTooShort},
		{"12 characters", "abcdefghijkl", nil},
		{"12 spaces count", strings.Repeat(" ", 12), nil},
		{"11 two-byte characters", strings.Repeat("é", 11), ErrTooShort},
		{"12 two-byte characters", strings.Repeat("é", 12), nil},
		{"12 Arabic letters", "كلمةمرورطويل", nil},
		{"73 bytes, over bcrypt's limit", strings.Repeat("a", 73), nil},
		{"1024 bytes", strings.Repeat("a", MaxBytes), nil},
		{"1025 bytes", strings.Repeat("a", MaxBytes+1), ErrTooLong},
		{"512 two-byte characters (1024 bytes)", strings.Repeat("é", 512), nil},
		{"513 two-byte characters (1026 bytes)", strings.Repeat("é", 513), ErrTooLong},
		{"256 four-byte characters (1024 bytes)", strings.Repeat("🔑", 256), nil},
		{"257 four-byte characters (1028 bytes)", strings.Repeat("🔑", 257), ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := Check(tt.plain); !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("Check(%.20q…) = %v, want %v", tt.plain, err, tt.want)
			}
		})
	}
}

func TestPolicyMessages(t *testing.T) {
	t.Parallel()

	// The messages go straight into 422 field errors.
	tests := []struct {
		err  error
		want string
	}{
		{ErrTooShort, fmt.Sprintf("must be at least %d characters", MinLength)},
		{ErrTooLong, fmt.Sprintf("must be at most %d bytes", MaxBytes)},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			t.Parallel()
			if tt.err.Error() != tt.want {
				t.Fatalf("message %q, want %q", tt.err, tt.want)
			}
		})
	}
}

func TestHashRefusesPolicyFailures(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		plain string
		want  error
	}{
		{"too short", "short", ErrTooShort},
		{"too long", strings.Repeat("x", MaxBytes+1), ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if h, err := Hash(tt.plain); !errors.Is(err, tt.want) || h != "" {
				t.Fatalf("Hash = %q, %v; want \"\", %v", h, err, tt.want)
			}
		})
	}
}

// currentFormat is what Hash must produce: the current parameters, a 16-byte
// salt (22 base64 characters) and a 32-byte key (43).
var currentFormat = regexp.MustCompile(`^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$`)

func mustHash(t *testing.T, plain string) string {
	t.Helper()
	h, err := Hash(plain)
	if err != nil {
		t.Fatalf("Hash: %v", err)
	}
	if !currentFormat.MatchString(h) {
		t.Fatalf("Hash = %q, not in the current PHC format", h)
	}
	return h
}

func TestHashAndVerify(t *testing.T) {
	t.Parallel()

	const plain = "correct horse battery staple"
	h := mustHash(t, plain)
	h2 := mustHash(t, plain)
	if h == h2 {
		t.Fatal("two hashes of one password are equal: salt missing")
	}
	p1, err1 := parse(h)
	p2, err2 := parse(h2)
	if err := errors.Join(err1, err2); err != nil {
		t.Fatalf("parse: %v", err)
	}
	if string(p1.salt) == string(p2.salt) {
		t.Fatal("two hashes share a salt")
	}
	// Past bcrypt's 72 bytes, the tail must count.
	long := strings.Repeat("m", 100)
	longHash := mustHash(t, long)
	longest := strings.Repeat("m", MaxBytes)
	longestHash := mustHash(t, longest)
	const arabic = "كلمةمرورطويل"
	arabicHash := mustHash(t, arabic)

	tests := []struct {
		name  string
		hash  string
		plain string
		want  bool
	}{
		{"right password", h, plain, true},
		{"right password, second hash", h2, plain, true},
		{"wrong password", h, "correct horse battery stapler", false},
		{"case differs", h, "Correct horse battery staple", false},
		{"trailing space", h, plain + " ", false},
		{"empty password", h, "", false},
		{"100-byte password", longHash, long, true},
		{"100 bytes differing at byte 90", longHash, long[:89] + "n" + long[90:], false},
		{"first 72 bytes only", longHash, long[:72], false},
		{"Arabic password", arabicHash, arabic, true},
		{"1024-byte password", longestHash, longest, true},
		{"1025 bytes sharing the first 1024 never match", longestHash, longest + "m", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got, err := Verify(tt.hash, tt.plain); err != nil || got != tt.want {
				t.Fatalf("Verify = %v, %v; want %v, nil", got, err, tt.want)
			}
		})
	}
}

// TestReferenceVectors verifies hashes made by the argon2 reference
// implementation (phc-winner-argon2, src/test.c), so the PHC encoding is the
// interoperable one, not merely self-consistent.
func TestReferenceVectors(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name  string
		plain string
		hash  string
	}{
		{"m=256 p=1", "password", "$argon2id$v=19$m=256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4"},
		{"m=256 p=2", "password", "$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc"},
		{"m=65536 p=1", "password", "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, err := parse(tt.hash)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := p.String(); got != tt.hash {
				t.Fatalf("re-encoded as %q", got)
			}
			if ok, err := Verify(tt.hash, tt.plain); !ok || err != nil {
				t.Fatalf("Verify(right) = %v, %v; want true, nil", ok, err)
			}
			if ok, err := Verify(tt.hash, tt.plain+"!"); ok || err != nil {
				t.Fatalf("Verify(wrong) = %v, %v; want false, nil", ok, err)
			}
			// 8-byte salt, other parameters: due for a rehash.
			if !NeedsRehash(tt.hash) {
				t.Fatal("NeedsRehash = false for a reference hash")
			}
		})
	}
}

func TestVerifyRejectsUnusableHashes(t *testing.T) {
	t.Parallel()

	const (
		salt = "c29tZXNhbHQ"                                 // "somesalt"
		key  = "nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4" // reference key, m=256,t=2,p=1
	)
	valid := "$argon2id$v=19$m=256,t=2,p=1$" + salt + "$" + key
	b64 := func(n int) string { return base64.RawStdEncoding.EncodeToString(make([]byte, n)) }

	tests := []struct {
		name string
		hash string
	}{
		{"empty", ""},
		{"garbage", "not-a-hash-at-all-but-long-enough-to-look-like-one-0123456789"},
		{"bcrypt", "$2a$12$YpOJx7A73UPbYlXnStfx3.y2zXP17gwnloKPurYXzNdlTuQrAoekG"},
		{"argon2i", "$argon2i$v=19$m=256,t=2,p=1$" + salt + "$" + key},
		{"argon2d", "$argon2d$v=19$m=256,t=2,p=1$" + salt + "$" + key},
		{"upper-case algorithm", "$ARGON2ID$v=19$m=256,t=2,p=1$" + salt + "$" + key},
		{"version 16", "$argon2id$v=16$m=256,t=2,p=1$" + salt + "$" + key},
		{"version 019", "$argon2id$v=019$m=256,t=2,p=1$" + salt + "$" + key},
		{"version missing", "$argon2id$m=256,t=2,p=1$" + salt + "$" + key},
		{"no leading dollar", valid[1:]},
		{"trailing dollar", valid + "$"},
		{"extra field", valid + "$AAAA"},
		{"key missing", "$argon2id$v=19$m=256,t=2,p=1$" + salt},
		{"parameters out of order", "$argon2id$v=19$t=2,m=256,p=1$" + salt + "$" + key},
		{"parameter missing", "$argon2id$v=19$m=256,t=2$" + salt + "$" + key},
		{"parameter repeated", "$argon2id$v=19$m=256,t=2,p=1,p=1$" + salt + "$" + key},
		{"optional keyid field", "$argon2id$v=19$m=256,t=2,p=1,keyid=AAAA$" + salt + "$" + key},
		{"parameters with spaces", "$argon2id$v=19$m=256, t=2, p=1$" + salt + "$" + key},
		{"parameter not a number", "$argon2id$v=19$m=x,t=2,p=1$" + salt + "$" + key},
		{"parameter negative", "$argon2id$v=19$m=256,t=-2,p=1$" + salt + "$" + key},
		{"parameter with plus sign", "$argon2id$v=19$m=+256,t=2,p=1$" + salt + "$" + key},
		{"parameter with leading zero", "$argon2id$v=19$m=0256,t=2,p=1$" + salt + "$" + key},
		{"parameter over 32 bits", "$argon2id$v=19$m=4294967296,t=2,p=1$" + salt + "$" + key},
		{"zero iterations", "$argon2id$v=19$m=256,t=0,p=1$" + salt + "$" + key},
		{"too many iterations", "$argon2id$v=19$m=256,t=65,p=1$" + salt + "$" + key},
		{"zero parallelism", "$argon2id$v=19$m=256,t=2,p=0$" + salt + "$" + key},
		{"parallelism over 255", "$argon2id$v=19$m=4096,t=2,p=256$" + salt + "$" + key},
		{"memory under 8 KiB per lane", "$argon2id$v=19$m=15,t=2,p=2$" + salt + "$" + key},
		{"memory over 1 GiB", "$argon2id$v=19$m=1048577,t=2,p=1$" + salt + "$" + key},
		{"salt padded", "$argon2id$v=19$m=256,t=2,p=1$" + salt + "=$" + key},
		{"salt URL alphabet", "$argon2id$v=19$m=256,t=2,p=1$" + b64(16)[:21] + "_$" + key},
		{"salt not base64", "$argon2id$v=19$m=256,t=2,p=1$som*salt$" + key},
		{"salt impossible length", "$argon2id$v=19$m=256,t=2,p=1$AAAABBBBC$" + key},
		{"salt non-zero trailing bits", "$argon2id$v=19$m=256,t=2,p=1$c29tZXNhbHR$" + key},
		{"salt with a line break", "$argon2id$v=19$m=256,t=2,p=1$c29tZXNh\nbHQ$" + key},
		{"salt empty", "$argon2id$v=19$m=256,t=2,p=1$$" + key},
		{"salt 7 bytes", "$argon2id$v=19$m=256,t=2,p=1$" + b64(7) + "$" + key},
		{"salt 65 bytes", "$argon2id$v=19$m=256,t=2,p=1$" + b64(65) + "$" + key},
		{"key empty", "$argon2id$v=19$m=256,t=2,p=1$" + salt + "$"},
		{"key 15 bytes", "$argon2id$v=19$m=256,t=2,p=1$" + salt + "$" + b64(15)},
		{"key 65 bytes", "$argon2id$v=19$m=256,t=2,p=1$" + salt + "$" + b64(65)},
		{"key padded", "$argon2id$v=19$m=256,t=2,p=1$" + salt + "$" + key + "="},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ok, err := Verify(tt.hash, "password")
			if ok || err == nil {
				t.Fatalf("Verify = %v, %v; want false and an error", ok, err)
			}
			if strings.Contains(err.Error(), salt) || strings.Contains(err.Error(), key) {
				t.Fatalf("error %q quotes the hash", err)
			}
			if !NeedsRehash(tt.hash) {
				t.Fatal("NeedsRehash = false for an unusable hash")
			}
		})
	}
	// The base the cases above break is itself valid.
	if ok, err := Verify(valid, "password"); !ok || err != nil {
		t.Fatalf("Verify(valid) = %v, %v", ok, err)
	}
}

// hashWith hashes plain with the given parameters, as an older or newer
// version of this package might have.
func hashWith(memory, iterations uint32, threads uint8, saltLen, keyLen int, plain string) string {
	h := phc{memory: memory, time: iterations, threads: threads, salt: make([]byte, saltLen)}
	for i := range h.salt {
		h.salt[i] = byte(i + 1)
	}
	h.key = h.derive(plain, keyLen)
	return h.String()
}

func TestNeedsRehash(t *testing.T) {
	t.Parallel()

	const plain = "a long enough password"
	tests := []struct {
		name string
		hash string
		want bool
	}{
		{"current parameters", mustHash(t, plain), false},
		{"current parameters, fixed salt", hashWith(MemoryKiB, Iterations, Parallelism, SaltBytes, KeyBytes, plain), false},
		{"dummy hash", dummyHash, false},
		{"less memory", hashWith(MemoryKiB/2, Iterations, Parallelism, SaltBytes, KeyBytes, plain), true},
		{"more memory", hashWith(MemoryKiB+1024, Iterations, Parallelism, SaltBytes, KeyBytes, plain), true},
		{"fewer iterations", hashWith(MemoryKiB, 1, Parallelism, SaltBytes, KeyBytes, plain), true},
		{"more iterations", hashWith(MemoryKiB, 3, Parallelism, SaltBytes, KeyBytes, plain), true},
		{"more lanes", hashWith(MemoryKiB, Iterations, 2, SaltBytes, KeyBytes, plain), true},
		{"shorter salt", hashWith(MemoryKiB, Iterations, Parallelism, 8, KeyBytes, plain), true},
		{"longer key", hashWith(MemoryKiB, Iterations, Parallelism, SaltBytes, 64, plain), true},
		{"shorter key", hashWith(MemoryKiB, Iterations, Parallelism, SaltBytes, 16, plain), true},
		{"bcrypt", "$2a$12$YpOJx7A73UPbYlXnStfx3.y2zXP17gwnloKPurYXzNdlTuQrAoekG", true},
		{"unreadable", "x", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := NeedsRehash(tt.hash); got != tt.want {
				t.Fatalf("NeedsRehash = %v, want %v", got, tt.want)
			}
			if !strings.HasPrefix(tt.hash, "$argon2id$") || tt.hash == dummyHash {
				return
			}
			// Hashes due for a rehash still log their owner in.
			if ok, err := Verify(tt.hash, plain); !ok || err != nil {
				t.Fatalf("Verify = %v, %v; want true, nil", ok, err)
			}
		})
	}
}

// TestDummyHash checks that the dummy hash is a canonical hash at the current
// parameters, so DummyVerify costs what a Verify of a fresh hash costs.
func TestDummyHash(t *testing.T) {
	t.Parallel()

	h, err := parse(dummyHash)
	if err != nil {
		t.Fatalf("parse(dummyHash): %v", err)
	}
	tests := []struct {
		name      string
		got, want any
	}{
		{"memory", h.memory, uint32(MemoryKiB)},
		{"iterations", h.time, uint32(Iterations)},
		{"parallelism", h.threads, uint8(Parallelism)},
		{"salt bytes", len(h.salt), SaltBytes},
		{"key bytes", len(h.key), KeyBytes},
		{"canonical", h.String(), dummyHash},
		{"current format", currentFormat.MatchString(dummyHash), true},
		{"needs no rehash", NeedsRehash(dummyHash), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.got != tt.want {
				t.Fatalf("got %v, want %v", tt.got, tt.want)
			}
		})
	}
}

// TestDummyVerifyCostsAVerify checks that an unknown-email login (DummyVerify)
// and an over-long password cost about as much as a wrong password (Verify);
// a skipped derivation would take microseconds instead of tens of
// milliseconds.
func TestDummyVerifyCostsAVerify(t *testing.T) {
	t.Parallel()

	stored := mustHash(t, "the user's password")
	const guess = "guess guess guess"
	timeOf := func(run func()) time.Duration {
		begin := time.Now()
		run()
		return time.Since(begin)
	}
	verify := func() {
		if ok, err := Verify(stored, guess); ok || err != nil {
			t.Errorf("Verify = %v, %v; want false, nil", ok, err)
		}
	}

	tests := []struct {
		name string
		run  func()
	}{
		{"dummy verify", func() { DummyVerify(guess) }},
		{"over-long password", func() {
			if ok, err := Verify(stored, strings.Repeat("g", 100*MaxBytes)); ok || err != nil {
				t.Errorf("Verify over-long = %v, %v; want false, nil", ok, err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// Interleave the runs and keep each side's fastest, so that load
			// from parallel tests hits both alike.
			const rounds = 3
			var genuine, other time.Duration
			for i := range rounds {
				r, o := timeOf(verify), timeOf(tt.run)
				if i == 0 || r < genuine {
					genuine = r
				}
				if i == 0 || o < other {
					other = o
				}
			}
			// Loose bound: only a missing or extra derivation fails it, not
			// a busy machine.
			if other < genuine/5 || other > genuine*5 {
				t.Fatalf("%s took %v, a real Verify took %v: not within 5x", tt.name, other, genuine)
			}
		})
	}
}

// FuzzParse checks that parse never panics and accepts only canonical
// strings: whatever it accepts re-encodes to the same string.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		dummyHash,
		"$argon2id$v=19$m=256,t=2,p=2$c29tZXNhbHQ$bQk8UB/VmZZF4Oo79iDXuL5/0ttZwg2f/5U52iv1cDc",
		"$argon2id$v=19$m=0256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4",
		"$argon2i$v=19$m=256,t=2,p=1$c29tZXNhbHQ$nf65EOgLrQMR/uIPnA4rEsF5h7TKyQwu9U1bMCHGi/4",
		"$2a$12$YpOJx7A73UPbYlXnStfx3.y2zXP17gwnloKPurYXzNdlTuQrAoekG",
		"",
		"$$$$$",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := parse(s)
		if err != nil {
			return
		}
		if got := h.String(); got != s {
			t.Fatalf("parse(%q) re-encodes as %q", s, got)
		}
	})
}
