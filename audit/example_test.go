package audit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/harness-runtime/harness/audit"
)

// A dispatcher appends one record per event, durably for trusted actions,
// and refuses to run a trusted action whose record could not be written.
// `harness audit verify` (or VerifyJSONL) later finds any edited record.
func Example() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "harness-audit.jsonl")
	ctx := context.Background()

	log, err := audit.Open(ctx, path, "replica-1")
	if err != nil {
		panic(err)
	}
	for _, ev := range []map[string]any{
		{"kind": "pre_action", "action": "workspace_apply_patch", "trusted": true},
		{"kind": "post_action", "action": "workspace_apply_patch", "status": "ok"},
	} {
		rec, err := log.Append(ctx, ev, ev["trusted"] == true)
		if err != nil {
			fmt.Println("audit failed, the trusted action does not run:", err)
			return
		}
		fmt.Printf("seq %d, first=%v\n", rec.Seq, rec.PrevHash == audit.ZeroHash)
	}
	if err := log.Close(); err != nil {
		panic(err)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		panic(err)
	}
	rep, err := audit.VerifyJSONL(bytes.NewReader(data))
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.OK(), rep.Records)

	edited := bytes.Replace(data, []byte(`"status":"ok"`), []byte(`"status":"error"`), 1)
	rep, err = audit.VerifyJSONL(bytes.NewReader(edited))
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.OK(), rep.FirstBad, rep.Problem)
	// Output:
	// seq 1, first=true
	// seq 2, first=false
	// true 2
	// false 2 hash_mismatch
}

// Replicas share one Postgres table, each with its own chain. The table's
// name can also be given in the URL: ?harness_audit_table=name.
func ExampleOpenPostgres() {
	ctx := context.Background()
	log, err := audit.OpenPostgres(ctx, "postgres://harness@db.internal:5432/harness", "replica-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer log.Close()
	if _, err := log.Append(ctx, map[string]any{"kind": "pre_action"}, true); err != nil {
		fmt.Println("fail closed:", err)
	}
	rep, err := audit.VerifyPostgres(ctx, "postgres://harness@db.internal:5432/harness", "replica-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep)
}

// A keyed chain: records are sealed with an HMAC under a key derived from
// the installation key, so someone who can write the log but not read the
// key cannot rewrite it with a chain that verifies.
func ExampleWithKey() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")
	key := bytes.Repeat([]byte{7}, 32) // in Harness: sanitize.LoadOrCreateKey
	ctx := context.Background()

	log, err := audit.OpenJSONL(path, audit.WithKey(key))
	if err != nil {
		panic(err)
	}
	if _, err := log.Append(ctx, map[string]any{"kind": "pre_action", "action": "workspace_apply_patch"}, true); err != nil {
		panic(err)
	}
	log.Close()

	rep, err := audit.VerifyJSONLFile(ctx, path, audit.WithKey(key))
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.OK(), rep.Records, rep.Unkeyed)

	// The same event in a fresh, valid, unkeyed chain: what a writer
	// without the key can produce.
	forged := filepath.Join(dir, "forged.jsonl")
	flog, err := audit.OpenJSONL(forged)
	if err != nil {
		panic(err)
	}
	flog.Append(ctx, map[string]any{"kind": "pre_action", "action": "workspace_read_file"}, true)
	flog.Close()
	rep, err = audit.VerifyJSONLFile(ctx, forged, audit.WithKey(key))
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.OK(), rep.FirstBad, rep.Problem)
	// Output:
	// true 1 0
	// false 1 unkeyed
}

// At start, a configuration that puts Harness's own files in the
// workspace is refused.
func ExampleCheckOutside() {
	err := audit.CheckOutside("/srv/project", "/srv/project/.harness/audit.jsonl")
	fmt.Println(errors.Is(err, audit.ErrInsideRoot))
	err = audit.CheckOutside("/srv/project", "/srv/project2/audit.jsonl")
	fmt.Println(err)
	// Output:
	// true
	// <nil>
}
