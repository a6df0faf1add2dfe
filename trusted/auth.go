package trusted

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/harness-runtime/harness/config"
)

// Permission is what an API key allows (SPEC section 3, auth.keys).
type Permission string

// Permissions. PermAdmin implies the others (PermApprove and PermAudit
// are with the approvals and the event routes).
const (
	PermExecute Permission = "agent:execute"
	PermTrusted Permission = "agent:trusted"
	PermAdmin   Permission = "admin"
)

// Key is one API key as the server holds it: the SHA-256 of the bearer
// token (never the token), its principal, tenant and permissions.
type Key struct {
	Principal   Principal
	SHA256      [sha256.Size]byte
	Permissions map[Permission]bool
}

// Allows reports whether the key grants perm (admin grants everything).
func (k *Key) Allows(perm Permission) bool {
	return k.Permissions[perm] || k.Permissions[PermAdmin]
}

// Keys authenticates bearer tokens against a fixed set of hashed keys.
// The zero value accepts nobody.
type Keys struct {
	keys []Key
}

// NewKeys converts the configured keys. Every problem is reported.
func NewKeys(cfg []config.AuthKey) (*Keys, error) {
	ks := &Keys{}
	var problems []string
	for i, c := range cfg {
		raw, err := hex.DecodeString(c.SHA256)
		if err != nil || len(raw) != sha256.Size {
			problems = append(problems, fmt.Sprintf("harness.auth.keys[%d].sha256: want 64 hex digits", i))
			continue
		}
		k := Key{Principal: Principal{Name: c.Principal, Tenant: c.Tenant}, Permissions: map[Permission]bool{}}
		copy(k.SHA256[:], raw)
		for _, p := range c.Permissions {
			k.Permissions[Permission(p)] = true
		}
		ks.keys = append(ks.keys, k)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("auth keys: %s", strings.Join(problems, "; "))
	}
	return ks, nil
}

// Len returns the number of keys.
func (ks *Keys) Len() int { return len(ks.keys) }

// Authenticate returns the key whose hash is the SHA-256 of token, or nil.
// The token's hash is compared with every key in constant time, and all
// keys are always compared, so that timing says nothing about which key
// (or which prefix of a hash) came close.
func (ks *Keys) Authenticate(token string) *Key {
	if token == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(token))
	var found *Key
	for i := range ks.keys {
		if subtle.ConstantTimeCompare(sum[:], ks.keys[i].SHA256[:]) == 1 {
			found = &ks.keys[i]
		}
	}
	return found
}

// bearer extracts the token of an "Authorization: Bearer <token>" header.
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}
