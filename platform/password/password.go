// Package password hashes and checks user passwords for the Central API.
//
// Passwords are hashed with argon2id (docs/api.md, §Central API; why not
// bcrypt: docs/design.md, §Passwords) at OWASP's recommended parameters:
// m=19456 KiB (19 MiB), t=2, p=1, with a 16-byte random salt and a 32-byte
// key. A hash is stored as a PHC
// string,
//
//	$argon2id$v=19$m=19456,t=2,p=1$<salt>$<key>
//
// with salt and key in unpadded standard base64. Verify reads the parameters
// from the string, so hashes made with other argon2id parameters keep
// verifying; NeedsRehash tells the caller when to replace them.
//
// argon2 has no input limit (unlike bcrypt's 72 bytes), but the policy caps a
// password at MaxBytes so that nobody can make the server hash megabytes.
//
// The package holds no mutable state: parameters and the dummy hash are
// constants, and the only package variables are the policy errors.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Parameters of every hash this package makes (OWASP's argon2id
// recommendation). Changing one makes NeedsRehash report true for older hashes.
const (
	// MemoryKiB is the argon2id memory cost in KiB (19 MiB).
	MemoryKiB = 19456
	// Iterations is the argon2id time cost: passes over the memory.
	Iterations = 2
	// Parallelism is the argon2id number of lanes (threads).
	Parallelism = 1
	// SaltBytes is the length of the random salt of each hash.
	SaltBytes = 16
	// KeyBytes is the length of the derived key stored in each hash.
	KeyBytes = 32
)

const (
	// MinLength is the fewest characters (Unicode code points) a password may have.
	MinLength = 12
	// MaxBytes is the most bytes a password may have. argon2 has no input
	// limit; this is a guard against requests that make the server hash huge
	// inputs.
	MaxBytes = 1024
)

// Bounds on the parameters Verify accepts from a stored hash. A hash outside
// them is refused as unusable rather than, say, allocating terabytes for a
// corrupted m=.
const (
	maxMemoryKiB  = 1 << 20 // 1 GiB
	maxIterations = 64
	minSaltBytes  = 8 // the argon2 specification's minimum
	maxSaltBytes  = 64
	minKeyBytes   = 16
	maxKeyBytes   = 64
)

// dummyHash is an argon2id hash, at the current parameters, of a random value
// nobody knows. DummyVerify compares against it so that a login for an unknown
// email costs as much as one with a wrong password. Its parameters must stay
// equal to the constants above (TestDummyHash checks this).
const dummyHash = "$argon2id$v=19$m=19456,t=2,p=1$GiZO0kfTGXXWDGBR9aYRVw$u5fiy1CkcL4VgUXNZ8y6q6wSS7mTw1cNpsx58Y5PSfs"

// Policy errors. Their messages are written to be shown as-is as a 422 field
// error on the password field.
var (
	// ErrTooShort is returned for a password under MinLength characters.
	ErrTooShort = errors.New("must be at least 12 characters")
	// ErrTooLong is returned for a password over MaxBytes bytes.
	ErrTooLong = errors.New("must be at most 1024 bytes")
)

// Check applies the password policy: at least MinLength characters and at most
// MaxBytes bytes. It returns nil, ErrTooShort or ErrTooLong.
func Check(plain string) error {
	if utf8.RuneCountInString(plain) < MinLength {
		return ErrTooShort
	}
	if len(plain) > MaxBytes {
		return ErrTooLong
	}
	return nil
}

// Hash checks plain against the policy and returns its argon2id hash at the
// current parameters, as a PHC string with a fresh random salt. A policy
// failure is returned unwrapped (ErrTooShort or ErrTooLong).
func Hash(plain string) (string, error) {
	if err := Check(plain); err != nil {
		return "", err
	}
	salt := make([]byte, SaltBytes)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: hashing: reading salt: %w", err)
	}
	h := phc{memory: MemoryKiB, time: Iterations, threads: Parallelism, salt: salt}
	h.key = h.derive(plain, KeyBytes)
	return h.String(), nil
}

// Verify reports whether plain matches hash, an argon2id PHC string. A wrong
// password is (false, nil); an error means the stored hash is unusable
// (malformed, another algorithm or version, parameters out of bounds). A
// password over MaxBytes never matches (no stored hash can be of one), but
// still costs a full derivation so its timing tells nothing.
func Verify(hash, plain string) (bool, error) {
	h, err := parse(hash)
	if err != nil {
		return false, fmt.Errorf("password: verifying: %w", err)
	}
	return h.matches(plain), nil
}

// DummyVerify spends the time of a Verify against a hash at the current
// parameters and throws the result away. Call it when the login email is
// unknown, so that response time does not reveal which emails have accounts.
func DummyVerify(plain string) {
	// The result is meaningless: nobody knows the value behind dummyHash.
	// The error is always nil, as dummyHash is a valid constant.
	_, _ = Verify(dummyHash, plain)
}

// NeedsRehash reports whether hash was made with parameters other than the
// current ones (memory, iterations, parallelism, salt or key length) or is
// unreadable, so the caller can store a fresh Hash after a successful login.
func NeedsRehash(hash string) bool {
	h, err := parse(hash)
	return err != nil ||
		h.memory != MemoryKiB || h.time != Iterations || h.threads != Parallelism ||
		len(h.salt) != SaltBytes || len(h.key) != KeyBytes
}

// phc is a parsed argon2id PHC string.
type phc struct {
	memory  uint32 // KiB
	time    uint32
	threads uint8
	salt    []byte
	key     []byte
}

// derive returns the argon2id key of plain with h's parameters and salt.
func (h phc) derive(plain string, keyLen int) []byte {
	return argon2.IDKey([]byte(plain), h.salt, h.time, h.memory, h.threads, uint32(keyLen))
}

// matches reports whether plain derives h's key, comparing in constant time.
// An over-long plain is cut to MaxBytes for the derivation, which is done
// only to spend the same time, and never matches.
func (h phc) matches(plain string) bool {
	tooLong := len(plain) > MaxBytes
	if tooLong {
		plain = plain[:MaxBytes]
	}
	same := subtle.ConstantTimeCompare(h.derive(plain, len(h.key)), h.key) == 1
	return same && !tooLong
}

// String encodes h as a PHC string.
func (h phc) String() string {
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, h.memory, h.time, h.threads,
		base64.RawStdEncoding.EncodeToString(h.salt),
		base64.RawStdEncoding.EncodeToString(h.key))
}

// parse reads an argon2id PHC string, version 19, in its canonical form only:
// parameters m, t, p in that order as decimals without leading zeros, no
// optional fields, salt and key in unpadded standard base64. Its errors never
// quote the string, which holds a password hash.
func parse(s string) (phc, error) {
	fields := strings.Split(s, "$")
	if len(fields) != 6 || fields[0] != "" {
		return phc{}, errors.New("hash is not a PHC string $argon2id$v=…$m=…,t=…,p=…$salt$key")
	}
	if fields[1] != "argon2id" {
		return phc{}, errors.New("hash algorithm is not argon2id")
	}
	if fields[2] != "v="+strconv.Itoa(argon2.Version) {
		return phc{}, fmt.Errorf("hash version is not v=%d", argon2.Version)
	}

	var h phc
	params := strings.Split(fields[3], ",")
	if len(params) != 3 {
		return phc{}, errors.New("hash parameters are not m=…,t=…,p=…")
	}
	m, errM := param(params[0], "m=")
	t, errT := param(params[1], "t=")
	p, errP := param(params[2], "p=")
	if err := errors.Join(errM, errT, errP); err != nil {
		return phc{}, err
	}
	switch {
	case p < 1 || p > 255:
		return phc{}, errors.New("hash parallelism p is not in 1..255")
	case t < 1 || t > maxIterations:
		return phc{}, fmt.Errorf("hash iterations t is not in 1..%d", maxIterations)
	case m < 8*p || m > maxMemoryKiB:
		return phc{}, fmt.Errorf("hash memory m is not in 8·p..%d KiB", maxMemoryKiB)
	}
	h.memory, h.time, h.threads = m, t, uint8(p)

	var err error
	if h.salt, err = decode(fields[4], "salt", minSaltBytes, maxSaltBytes); err != nil {
		return phc{}, err
	}
	if h.key, err = decode(fields[5], "key", minKeyBytes, maxKeyBytes); err != nil {
		return phc{}, err
	}
	return h, nil
}

// param reads one "name=decimal" parameter; the decimal must be canonical
// (digits only, no leading zero) and fit in 32 bits.
func param(s, prefix string) (uint32, error) {
	digits, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return 0, fmt.Errorf("hash parameter %q missing or out of order", strings.TrimSuffix(prefix, "="))
	}
	v, err := strconv.ParseUint(digits, 10, 32)
	if err != nil || strconv.FormatUint(v, 10) != digits {
		return 0, fmt.Errorf("hash parameter %q is not a canonical 32-bit decimal", strings.TrimSuffix(prefix, "="))
	}
	return uint32(v), nil
}

// decode reads a field in canonical unpadded standard base64 and checks that
// it decodes to between minLen and maxLen bytes.
func decode(s, name string, minLen, maxLen int) ([]byte, error) {
	b, err := base64.RawStdEncoding.DecodeString(s)
	// Re-encoding refuses what the decoder tolerates: line breaks, non-zero
	// trailing bits.
	if err != nil || base64.RawStdEncoding.EncodeToString(b) != s {
		return nil, fmt.Errorf("hash %s is not unpadded standard base64", name)
	}
	if len(b) < minLen || len(b) > maxLen {
		return nil, fmt.Errorf("hash %s is %d bytes, not %d..%d", name, len(b), minLen, maxLen)
	}
	return b, nil
}
