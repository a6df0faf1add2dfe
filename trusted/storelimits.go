package trusted

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/harness-runtime/harness/action"
)

// Default caps on what one principal may hold in a token store: tokens
// minted by a preview and neither redeemed nor expired. With the default
// 4 MiB request body, the byte cap still leaves room for several of the
// largest previews at once, while an agent that previews in a loop without
// redeeming stops at a bounded cost instead of growing the store without
// end.
const (
	DefaultMaxTokensPerPrincipal     = 64
	DefaultMaxTokenBytesPerPrincipal = 32 << 20
)

// TokenLimits caps the live tokens (unexpired and unredeemed) one
// principal may hold in a store, across all its tenants: MaxTokens in
// number and MaxBytes in the size of their records. A zero field means its
// default (DefaultMaxTokensPerPrincipal, DefaultMaxTokenBytesPerPrincipal);
// a negative one means no cap.
//
// The size of a record is what the store keeps: for RedisStore the bytes
// of its stored encoding, exactly; for MemoryStore an estimate of the
// memory it holds (every string's bytes plus a fixed overhead per value),
// which for ordinary inputs is within a few per cent of the encoding.
type TokenLimits struct {
	MaxTokens int
	MaxBytes  int64
}

// caps returns the effective caps, with -1 for "no cap".
func (l TokenLimits) caps() (maxTokens, maxBytes int64) {
	maxTokens, maxBytes = int64(l.MaxTokens), l.MaxBytes
	switch {
	case maxTokens == 0:
		maxTokens = DefaultMaxTokensPerPrincipal
	case maxTokens < 0:
		maxTokens = -1
	}
	switch {
	case maxBytes == 0:
		maxBytes = DefaultMaxTokenBytesPerPrincipal
	case maxBytes < 0:
		maxBytes = -1
	}
	return maxTokens, maxBytes
}

// ErrTokenLimit matches (errors.Is) every error a store's Put returns
// because the record would take its principal over a cap. Nothing was
// stored.
var ErrTokenLimit = errors.New("trusted: token limit reached")

// LimitKind names the cap a LimitError hit.
type LimitKind string

const (
	LimitTokens LimitKind = "tokens" // the number of live tokens
	LimitBytes  LimitKind = "bytes"  // the bytes of their records
)

// LimitError says which of a principal's caps refused a record. A store
// returns it wrapped in an *action.Error (see limitError), so that the
// code travels with it; errors.As finds either.
type LimitError struct {
	Principal string
	Kind      LimitKind
	Max       int64 // the cap
	Held      int64 // live tokens, or their bytes, before this record
	Size      int64 // this record's bytes
	// RetryAfter is how long until the principal's oldest live token
	// expires and frees room; zero when waiting cannot help (a record
	// larger than the byte cap on its own).
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	if e.Kind == LimitTokens {
		return fmt.Sprintf("principal %q holds %d unredeemed tokens, the most allowed (%d)", e.Principal, e.Held, e.Max)
	}
	if e.Size > e.Max {
		return fmt.Sprintf("the preview's token record (%d bytes) is larger than a principal may hold (%d bytes)", e.Size, e.Max)
	}
	return fmt.Sprintf("principal %q holds %d bytes of unredeemed tokens; %d more would pass the cap of %d bytes", e.Principal, e.Held, e.Size, e.Max)
}

// Is makes errors.Is(err, ErrTokenLimit) true.
func (e *LimitError) Is(target error) bool { return target == ErrTokenLimit }

// limitError wraps le in the *action.Error a store returns. A record that
// can never fit (larger than the byte cap by itself) is too_large (HTTP
// 413): retrying cannot help. Every other refusal is rate_limited (HTTP
// 429): the principal has to redeem or wait for a token to expire, and
// retry_after_ms says how long the wait is at most.
func limitError(le *LimitError) *action.Error {
	code := action.CodeRateLimited
	msg := le.Error() + "; redeem or let expire an earlier preview's token, then retry"
	if le.Kind == LimitBytes && le.Size > le.Max {
		code = action.CodeTooLarge
		msg = le.Error()
	}
	payload := map[string]any{"limit": string(le.Kind), "max": le.Max, "held": le.Held}
	if le.RetryAfter > 0 {
		payload["retry_after_ms"] = le.RetryAfter.Milliseconds()
	}
	return &action.Error{Code: code, Message: msg, Payload: payload, Err: le}
}

// overCap returns the LimitError for adding a record of size bytes to a
// principal holding count tokens of held bytes, or nil when it fits.
// Count is checked first: it is the cheaper cap to explain.
func overCap(principal string, count, held, size, maxTokens, maxBytes int64) *LimitError {
	switch {
	case maxBytes >= 0 && size > maxBytes:
		return &LimitError{Principal: principal, Kind: LimitBytes, Max: maxBytes, Held: held, Size: size}
	case maxTokens >= 0 && count+1 > maxTokens:
		return &LimitError{Principal: principal, Kind: LimitTokens, Max: maxTokens, Held: count, Size: size}
	case maxBytes >= 0 && held+size > maxBytes:
		return &LimitError{Principal: principal, Kind: LimitBytes, Max: maxBytes, Held: held, Size: size}
	}
	return nil
}

// Per-value overhead of recordSize: roughly what a map entry, an interface
// and a string header cost, so that many tiny values are not free.
const valueOverhead = 16

// recordSize estimates the memory a record holds: the bytes of every
// string in it plus valueOverhead for every value. It is linear in the
// record and allocates nothing.
func recordSize(r Record) int64 {
	n := int64(len(r.Action.ID)+len(r.Action.Name)+len(r.Action.Tenant)+len(r.Action.SessionID)+
		len(r.Action.TaskID)+len(r.Action.StepID)+len(r.Action.AgentID)+
		len(r.ActionHash)+len(r.Principal)+len(r.Tenant)) + 12*valueOverhead
	n += valueSize(r.Action.Input)
	for _, f := range r.Files {
		n += int64(len(f.Path)+len(f.SHA256)) + 3*valueOverhead
	}
	return n
}

func valueSize(v any) int64 {
	switch v := v.(type) {
	case string:
		return int64(len(v)) + valueOverhead
	case map[string]any:
		n := int64(valueOverhead)
		for k, e := range v {
			n += int64(len(k)) + valueSize(e)
		}
		return n
	case []any:
		n := int64(valueOverhead)
		for _, e := range v {
			n += valueSize(e)
		}
		return n
	case []string:
		n := int64(valueOverhead)
		for _, e := range v {
			n += int64(len(e)) + valueOverhead
		}
		return n
	case json.Number:
		return int64(len(v)) + valueOverhead
	}
	return valueOverhead
}
