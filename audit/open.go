package audit

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"
)

// Appender writes audit records. It is what the dispatcher needs: a trusted
// action runs only if Append with durable=true returned no error.
type Appender interface {
	// Append adds event (any value action.Canonical accepts) as the next
	// record of the chain and returns it. With durable=true it returns
	// only once the record is on stable storage. An error means the
	// record may not have been written and the caller must fail closed.
	Append(ctx context.Context, event any, durable bool) (Record, error)
}

// BatchAppender is an Appender that can add several events as consecutive
// records, all or none, in one write.
type BatchAppender interface {
	Appender
	AppendAll(ctx context.Context, events []any, durable bool) (Record, error)
}

// Log is an Appender that holds resources to release: what Open returns.
type Log interface {
	Appender
	io.Closer
}

// Errors of this package, for errors.Is.
var (
	// ErrClosed is returned by Append after Close.
	ErrClosed = errors.New("audit: log is closed")
	// ErrBroken is returned by Append after a failed write or fsync left
	// the end of a JSONL log unknown; reopening the log repairs it.
	ErrBroken = errors.New("audit: log is unusable after a failed write")
	// ErrCorrupt is returned by OpenJSONL when the last complete record
	// of an existing log is not valid, so the chain cannot be continued.
	ErrCorrupt = errors.New("audit: log tail is corrupt")
)

// Option changes how a log is opened or verified; each says where it
// applies and is ignored elsewhere.
type Option func(*config)

type config struct {
	instance string
	table    string
	now      func() time.Time
	anchor   Anchor

	key          []byte
	keySet       bool
	allowUnkeyed bool
	log          *slog.Logger
	hub          *Hub
}

// WithLogger gives a log the logger its warnings go to (a torn line moved
// aside, records found removed, an unkeyed log continued with a key);
// without it they are discarded: a library does not write to stderr on
// its own.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.log = l }
}

func newConfig(opts []Option) config {
	c := config{now: time.Now}
	for _, o := range opts {
		o(&c)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c
}

// WithInstance sets the instance name written in every record of a JSONL
// log (default DefaultInstance). For Postgres, the instance argument of
// OpenPostgres wins when it is not empty.
func WithInstance(id string) Option { return func(c *config) { c.instance = id } }

// WithTable sets the Postgres table (default "harness_audit"; also settable
// with the DSN parameter harness_audit_table). The name is an identifier,
// optionally schema-qualified: [schema.]table, lower-case letters, digits
// and underscores.
func WithTable(name string) Option { return func(c *config) { c.table = name } }

// WithAnchor makes VerifyJSONL and VerifyPostgres (for one instance) also
// check the chain against a head recorded elsewhere, which is the only way
// to notice records removed from the end of a log.
func WithAnchor(a Anchor) Option { return func(c *config) { c.anchor = a } }

// WithClock replaces time.Now for the time of new records, for tests and
// replays. Record times are informative: the chain does not depend on them.
func WithClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

// DefaultInstance is the instance name used when none is configured: the
// host name (or "harness" when it is unknown). It is stable across
// restarts, so a Postgres chain goes on after one; two processes that share
// it still write one valid chain, because appends to a chain are serialised
// in the database.
func DefaultInstance() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "harness"
	}
	return h
}

// IsPostgres reports whether an audit target names a PostgreSQL database
// (postgres:// or postgresql://) rather than a file.
func IsPostgres(target string) bool {
	return strings.HasPrefix(target, "postgres://") || strings.HasPrefix(target, "postgresql://")
}

// Open opens the audit log named by target, the value of the audit setting:
// a postgres:// or postgresql:// URL opens a Postgres log for instance,
// anything else is a JSONL file path. An empty instance means
// DefaultInstance.
func Open(ctx context.Context, target, instance string, opts ...Option) (Log, error) {
	if target == "" {
		return nil, errors.New("audit: no log target configured")
	}
	if IsPostgres(target) {
		return OpenPostgres(ctx, target, instance, opts...)
	}
	if instance != "" {
		opts = append(opts, WithInstance(instance))
	}
	return OpenJSONL(target, opts...)
}
