package trusted

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/harness-runtime/harness/action"
)

// TokenPrefix starts every confirmation token, so that a leaked token is
// recognisable (by people and by secret scanners) for what it is.
const TokenPrefix = "htk_"

// tokenBytes is the entropy of a token: 256 bits from crypto/rand, twice
// the 128 bits SPEC section 5 asks for.
const tokenBytes = 32

// encodedTokenLen is len(TokenPrefix) plus the unpadded base64url length of
// tokenBytes bytes.
var encodedTokenLen = len(TokenPrefix) + base64.RawURLEncoding.EncodedLen(tokenBytes)

// NewToken returns a fresh confirmation token and the ID under which a
// store keeps it: the hex SHA-256 of the token. The token itself is never
// stored; only the caller that previewed ever sees it.
func NewToken() (token, id string, err error) {
	var b [tokenBytes]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("mint confirmation token: %w", err)
	}
	token = TokenPrefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, TokenID(token), nil
}

// TokenID returns the store ID of a token: the hex SHA-256 of its text.
func TokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// wellFormed reports whether token has the shape NewToken produces. A
// malformed token is refused without asking the store, exactly like an
// unknown one.
func wellFormed(token string) bool {
	if len(token) != encodedTokenLen || token[:len(TokenPrefix)] != TokenPrefix {
		return false
	}
	for i := len(TokenPrefix); i < len(token); i++ {
		c := token[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// FileState is a precondition on one workspace file, captured at preview:
// the file at Path exists with content of hex SHA-256 SHA256, or (Exists
// false) does not exist at all.
type FileState = action.FileState

// Record is what a store keeps for one token. It holds everything Execute
// needs, so that what runs is exactly what was previewed: the action
// itself, its canonical hash (checked again before running), who may
// redeem it, until when, and the state of the files it will touch.
type Record struct {
	Action     action.Action `json:"action"`
	ActionHash string        `json:"action_hash"`
	Principal  string        `json:"principal"`
	Tenant     string        `json:"tenant"`
	CreatedAt  time.Time     `json:"created_at"`
	ExpiresAt  time.Time     `json:"expires_at"`
	Files      []FileState   `json:"files,omitempty"`
	// ApprovalID names the approval a token was minted for: its run
	// answers the guard's ask with it.
	ApprovalID string `json:"approval_id,omitempty"`
}

// ErrTokenNotFound is returned by TokenStore.Consume for a token that is
// unknown, already used, expired, or bound to another principal or tenant.
// The cases are deliberately indistinguishable.
var ErrTokenNotFound = errors.New("trusted: token not found")

// TokenStore keeps preview tokens, by ID (the SHA-256 of the token), until
// they are consumed or expire.
//
// Implementations must make Consume atomic: of any number of concurrent
// calls for one ID, in this process or any other sharing the store, at most
// one returns the record. A record whose principal or tenant differs from
// the caller's is neither returned nor removed, so that a foreign caller
// cannot burn someone else's token.
type TokenStore interface {
	// Put stores rec under id until rec.ExpiresAt.
	Put(ctx context.Context, id string, rec Record) error
	// Consume removes and returns the record stored under id if it belongs
	// to principal and tenant; otherwise it returns ErrTokenNotFound and
	// changes nothing. It may return an expired record that the store has
	// not yet swept: the caller checks ExpiresAt.
	Consume(ctx context.Context, id, principal, tenant string) (Record, error)
	// Ping reports whether the store is reachable (for /readyz).
	Ping(ctx context.Context) error
	// Close releases the store's resources.
	Close() error
}
