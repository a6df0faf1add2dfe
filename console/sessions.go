package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"sync"
	"time"

	"github.com/harness-runtime/harness/trusted"
)

// Cookie names. The session cookie carries the session's id; the login
// cookie carries a random value the sign-in form's CSRF token is bound to
// (a login CSRF defence: another site cannot sign a browser in as itself).
const (
	sessionCookie = "harness_console"
	loginCookie   = "harness_console_login"
	cookiePath    = "/console/"
	csrfHeader    = "X-CSRF-Token"
)

// session is one signed-in person.
type session struct {
	principal trusted.Principal
	// audit reports that the key also allows agent:audit (any session's
	// history, not only those of visible approvals).
	audit   bool
	csrf    string
	created time.Time
	expires time.Time
}

// sessions holds the signed-in sessions by the SHA-256 of their id, so
// that a dump of the process's memory or a log line never holds a usable
// cookie. Bounded: beyond max the oldest session is signed out.
type sessions struct {
	ttl time.Duration
	max int
	now func() time.Time
	// loginKey binds login CSRF tokens to their cookie (per process: a
	// restart invalidates half-finished sign-ins, nothing else).
	loginKey [32]byte

	mu   sync.Mutex
	byID map[[sha256.Size]byte]*session
}

func newSessions(ttl time.Duration, max int, now func() time.Time) *sessions {
	s := &sessions{ttl: ttl, max: max, now: now, byID: map[[sha256.Size]byte]*session{}}
	if _, err := rand.Read(s.loginKey[:]); err != nil {
		panic("console: no randomness: " + err.Error())
	}
	return s
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("console: no randomness: " + err.Error())
	}
	return hex.EncodeToString(b)
}

// create signs p in and returns the cookie's value and the CSRF token.
func (s *sessions) create(p trusted.Principal, audit bool) (id string, st session) {
	id = randomHex(32)
	now := s.now()
	st = session{principal: p, audit: audit, csrf: randomHex(32), created: now, expires: now.Add(s.ttl)}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expireLocked(now)
	for len(s.byID) >= s.max {
		s.dropOldestLocked()
	}
	cp := st
	s.byID[sha256.Sum256([]byte(id))] = &cp
	return id, st
}

// get returns the live session whose id is id.
func (s *sessions) get(id string) (session, bool) {
	if len(id) != 64 {
		return session{}, false
	}
	h := sha256.Sum256([]byte(id))
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.byID[h]
	if !ok {
		return session{}, false
	}
	if !s.now().Before(st.expires) {
		delete(s.byID, h)
		return session{}, false
	}
	return *st, true
}

// remove signs the session id out.
func (s *sessions) remove(id string) {
	h := sha256.Sum256([]byte(id))
	s.mu.Lock()
	delete(s.byID, h)
	s.mu.Unlock()
}

// len returns the number of sessions held (expired ones included until
// the next sign-in sweeps them).
func (s *sessions) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

func (s *sessions) expireLocked(now time.Time) {
	for h, st := range s.byID {
		if !now.Before(st.expires) {
			delete(s.byID, h)
		}
	}
}

func (s *sessions) dropOldestLocked() {
	var oldest [sha256.Size]byte
	var first *session
	for h, st := range s.byID {
		if first == nil || st.created.Before(first.created) {
			oldest, first = h, st
		}
	}
	delete(s.byID, oldest)
}

// loginCSRF returns the sign-in form's CSRF token for the login cookie's
// value v.
func (s *sessions) loginCSRF(v string) string {
	m := hmac.New(sha256.New, s.loginKey[:])
	m.Write([]byte("console-login\x00"))
	m.Write([]byte(v))
	return hex.EncodeToString(m.Sum(nil))
}

// sameToken compares two tokens in constant time; an empty one never
// matches.
func sameToken(a, b string) bool {
	return a != "" && b != "" && subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
