package audit

import (
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"sync"
)

// MinKeyLen is the shortest installation key WithKey accepts: the same
// bound as the sanitizer's (sanitize.MinKeyLen).
const MinKeyLen = 16

// Errors about the chain's key, for errors.Is.
var (
	// ErrKeyRequired: the log holds keyed records and no key was given,
	// so they can be neither checked nor continued.
	ErrKeyRequired = errors.New("audit: the log is keyed and no key was given")
	// ErrWrongKey: the log's last record was keyed with another key (or
	// does not verify under this one), so the chain cannot be continued.
	ErrWrongKey = errors.New("audit: the log was keyed with another key")
)

// WithKey keys the chain with the installation's secret key (the one
// sanitize.LoadOrCreateKey returns). For OpenJSONL, OpenPostgres and Open,
// every record appended is keyed; for VerifyJSONL, VerifyJSONLFile and
// VerifyPostgres, keyed records are checked with it and unkeyed records are
// refused unless AllowUnkeyed is given too. The key must have at least
// MinKeyLen bytes, or opening and verifying fail.
//
// The chain does not use key itself but a key derived from it with HKDF
// under a label of its own (see the package documentation), so that no
// value the sanitizer computes with key (its "hmac-sha256:" markers, which
// the model may see) is ever a valid record hash.
func WithKey(key []byte) Option {
	k := append([]byte(nil), key...)
	return func(c *config) { c.key, c.keySet = k, true }
}

// AllowUnkeyed makes a verifier given a key accept unkeyed records at the
// start of the chain: a log written before the chain was keyed, or
// continued by a keyed writer since. Such records are protected only by
// the keyed record after them, if any; Report.Unkeyed counts them. An
// unkeyed record after a keyed one is refused even so.
func AllowUnkeyed() Option { return func(c *config) { c.allowUnkeyed = true } }

// chainKey is the HMAC key of a keyed chain.
type chainKey struct {
	id   string    // KeyIDLen lower-case hex digits, written in each keyed record
	macs sync.Pool // of hash.Hash: HMAC-SHA-256 under the derived key
}

// KeyIDLen is the length of a record's key_id: hex digits of 8 bytes.
const KeyIDLen = 16

// Labels of the derivation: changing them changes every keyed hash.
const (
	kdfSalt = "github.com/harness-runtime/harness/audit chain key"
	kdfInfo = "hmac-sha256 v1"
	idLabel = "key id"
)

// newChainKey derives the chain's key from the installation key.
//
// HKDF-Extract computes HMAC(salt, key): HMAC keyed with a public constant
// over the installation key, where the sanitizer computes HMAC(key, value)
// over values an agent may choose. The two never meet, so no marker the
// sanitizer shows can be, or help compute, the chain's key.
func newChainKey(key []byte) (*chainKey, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("audit key: %d bytes, need at least %d", len(key), MinKeyLen)
	}
	derived, err := hkdf.Key(sha256.New, key, []byte(kdfSalt), kdfInfo, sha256.Size)
	if err != nil {
		return nil, fmt.Errorf("audit key: %w", err)
	}
	m := hmac.New(sha256.New, derived)
	m.Write([]byte(idLabel))
	k := &chainKey{id: hex.EncodeToString(m.Sum(nil)[:KeyIDLen/2])}
	k.macs.New = func() any { return hmac.New(sha256.New, derived) }
	return k, nil
}

// KeyID returns the key_id that records keyed with key carry: a name for
// the key that reveals nothing of it. It lets an operator tell which key a
// log was written with.
func KeyID(key []byte) (string, error) {
	k, err := newChainKey(key)
	if err != nil {
		return "", err
	}
	return k.id, nil
}

// sum returns the hex HMAC of input.
func (k *chainKey) sum(input []byte) string {
	m := k.macs.Get().(hash.Hash)
	m.Reset()
	m.Write(input)
	var buf [sha256.Size]byte
	out := m.Sum(buf[:0])
	k.macs.Put(m)
	return hex.EncodeToString(out)
}

// equalHash compares two hex hashes in constant time, so that a verifier
// answering many forged records does not tell how much of a MAC was right.
func equalHash(a, b string) bool {
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}

// chainKeyOf returns the key of cfg, nil when none was given.
func chainKeyOf(cfg config) (*chainKey, error) {
	if !cfg.keySet {
		return nil, nil
	}
	return newChainKey(cfg.key)
}
