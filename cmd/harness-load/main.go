// Command harness-load measures the trusted flow of `harness serve`: N
// concurrent clients each doing preview -> execute of a small patch (a
// whole-file replacement of their own file, client-NNN/load.txt: each
// client works in its own directory, as agents on different parts of a
// tree do; -same-dir puts every file in the root instead) for a fixed
// time, and reports pairs per second, pair latency percentiles and errors.
//
// Against a running server:
//
//	HARNESS_KEY=… harness-load -addr http://127.0.0.1:8080 -clients 32 -duration 10s
//
// Or with an in-process server on a temporary workspace and JSONL audit log:
//
//	harness-load -store memory -clients 32 -duration 10s
//	harness-load -store redis://127.0.0.1:6379/15 -clients 32 -duration 10s
//
// Exit status: 0 when there were no errors and the -min-rate and -max-p99
// targets (when set) were met, 1 otherwise, 2 for usage errors.
package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harness-runtime/harness/pipeline"

	"github.com/harness-runtime/harness/config"
	"github.com/harness-runtime/harness/internal/tune"
	"github.com/harness-runtime/harness/trusted"
)

func main() {
	tune.AfterInit()
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	addr, store, key string
	auditMode        string
	clients          int
	duration, warmup time.Duration
	minRate          float64
	maxP99           time.Duration
	jsonOut          bool
	sameDir          bool
	cpuProfile       string
	mutexProfile     string
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("harness-load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.addr, "addr", "", "base URL of a running harness serve (default: start one in-process)")
	fs.StringVar(&o.store, "store", "memory", "token store of the in-process server: memory or redis://host:port/db")
	fs.StringVar(&o.auditMode, "audit", "jsonl", "audit log of the in-process server: jsonl (durable, as harness serve) or none (to measure the cost of the audit)")
	fs.StringVar(&o.key, "key", "", "bearer key for -addr (default $HARNESS_KEY)")
	fs.IntVar(&o.clients, "clients", 32, "concurrent clients")
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "how long to measure")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "how long to run before measuring")
	fs.Float64Var(&o.minRate, "min-rate", 0, "fail unless at least this many pairs/s")
	fs.DurationVar(&o.maxP99, "max-p99", 0, "fail unless the p99 pair latency is at most this")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result as JSON")
	fs.BoolVar(&o.sameDir, "same-dir", false, "every client's file in the workspace root (default: client-NNN/load.txt); the file system then serializes their creates and renames on one directory")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of this process (server included when in-process) to file")
	fs.StringVar(&o.mutexProfile, "mutexprofile", "", "write a mutex contention profile to file")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if o.clients < 1 || o.duration <= 0 {
		fmt.Fprintln(stderr, "harness-load: -clients must be >= 1 and -duration > 0")
		return 2
	}
	target := o.addr
	storeLabel := "external"
	if target == "" {
		// The in-process server runs with the runtime settings of
		// `harness serve`.
		tune.GC()
		tune.Procs()
		base, key, stop, err := startInProcess(ctx, o.store, o.auditMode)
		if err != nil {
			fmt.Fprintf(stderr, "harness-load: %v\n", err)
			return 1
		}
		defer stop()
		target, o.key, storeLabel = base, key, storeKind(o.store)
	} else if o.key == "" {
		o.key = os.Getenv("HARNESS_KEY")
	}
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			fmt.Fprintf(stderr, "harness-load: %v\n", err)
			return 2
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if o.mutexProfile != "" {
		goruntime.SetMutexProfileFraction(5)
		defer func() {
			if f, err := os.Create(o.mutexProfile); err == nil {
				pprof.Lookup("mutex").WriteTo(f, 0)
				f.Close()
			}
		}()
	}
	if _, err := newConn(target, o.key, requestTimeout); err != nil {
		fmt.Fprintf(stderr, "harness-load: %v\n", err)
		return 2
	}
	res := load(target, o)
	res.Store, res.Audit = storeLabel, o.auditMode
	if o.addr != "" {
		res.Audit = "external"
	}
	if o.jsonOut {
		b, _ := json.MarshalIndent(res, "", "  ")
		fmt.Fprintln(stdout, string(b))
	} else {
		res.print(stdout)
	}
	ok := res.Errors == 0 && res.Pairs > 0
	if o.minRate > 0 && res.PairsPerSec < o.minRate {
		fmt.Fprintf(stderr, "harness-load: %.0f pairs/s is below the target %.0f\n", res.PairsPerSec, o.minRate)
		ok = false
	}
	if o.maxP99 > 0 && res.P99 > o.maxP99 {
		fmt.Fprintf(stderr, "harness-load: p99 %s is above the target %s\n", res.P99, o.maxP99)
		ok = false
	}
	if !ok {
		return 1
	}
	return 0
}

func storeKind(s string) string {
	if s == "" || s == "memory" {
		return "memory"
	}
	return "redis"
}

// result is what one run measured.
type result struct {
	Store       string        `json:"store"`
	Audit       string        `json:"audit"`
	Clients     int           `json:"clients"`
	SameDir     bool          `json:"same_dir"`
	Duration    time.Duration `json:"duration_ns"`
	Pairs       int           `json:"pairs"`
	Errors      int64         `json:"errors"`
	PairsPerSec float64       `json:"pairs_per_sec"`
	P50         time.Duration `json:"p50_ns"`
	P99         time.Duration `json:"p99_ns"`
	Max         time.Duration `json:"max_ns"`
	PreviewP50  time.Duration `json:"preview_p50_ns"`
	ExecuteP50  time.Duration `json:"execute_p50_ns"`
	// CPUPerPair is this process's CPU time (user + system) per measured
	// pair: with an in-process server it bounds the rate the machine can
	// reach (cores / CPUPerPair) whatever else runs on it.
	CPUPerPair time.Duration `json:"cpu_per_pair_ns"`
	FirstError string        `json:"first_error,omitempty"`
}

func (r result) print(w io.Writer) {
	layout := "a directory per client"
	if r.SameDir {
		layout = "one directory"
	}
	fmt.Fprintf(w, "harness-load: store=%s audit=%s clients=%d (%s) duration=%s\n", r.Store, r.Audit, r.Clients, layout, r.Duration.Round(time.Millisecond))
	fmt.Fprintf(w, "pairs: %d  pairs/s: %.0f  errors: %d\n", r.Pairs, r.PairsPerSec, r.Errors)
	fmt.Fprintf(w, "pair latency: p50 %s  p99 %s  max %s  (preview p50 %s, execute p50 %s)\n",
		ms(r.P50), ms(r.P99), ms(r.Max), ms(r.PreviewP50), ms(r.ExecuteP50))
	if r.CPUPerPair > 0 {
		fmt.Fprintf(w, "cpu per pair (this process): %s\n", ms(r.CPUPerPair))
	}
	if r.FirstError != "" {
		fmt.Fprintf(w, "first error: %s\n", r.FirstError)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

// sample is one measured pair.
type sample struct{ pair, preview, execute time.Duration }

// load runs the clients: warmup first (not measured), then duration.
func load(base string, o options) result {
	var measuring atomic.Bool
	var errs atomic.Int64
	var firstErr sync.Once
	var firstMsg string
	samples := make([][]sample, o.clients)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < o.clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			c, _ := newConn(base, o.key, requestTimeout) // base was checked by run
			defer c.close()
			path := fmt.Sprintf("client-%03d/load.txt", i)
			if o.sameDir {
				path = fmt.Sprintf("load-%03d.txt", i)
			}
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				t0 := time.Now()
				err := pair(c, path, fmt.Sprintf("client %d iteration %d\n", i, n), &samples[i], measuring.Load(), t0)
				if err != nil && measuring.Load() {
					errs.Add(1)
					firstErr.Do(func() { firstMsg = err.Error() })
				}
			}
		}(i)
	}
	time.Sleep(o.warmup)
	for i := range samples {
		samples[i] = samples[i][:0]
	}
	measuring.Store(true)
	start, cpu0 := time.Now(), cpuTime()
	time.Sleep(o.duration)
	measuring.Store(false)
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	close(stop)
	wg.Wait()

	var pairs, previews, executes []time.Duration
	for _, ss := range samples {
		for _, s := range ss {
			pairs = append(pairs, s.pair)
			previews = append(previews, s.preview)
			executes = append(executes, s.execute)
		}
	}
	r := result{Clients: o.clients, SameDir: o.sameDir, Duration: elapsed, Pairs: len(pairs), Errors: errs.Load(), FirstError: firstMsg}
	r.PairsPerSec = float64(len(pairs)) / elapsed.Seconds()
	if len(pairs) > 0 && cpu > 0 {
		r.CPUPerPair = cpu / time.Duration(len(pairs))
	}
	r.P50, r.P99, r.Max = pct(pairs, 0.50), pct(pairs, 0.99), pct(pairs, 1)
	r.PreviewP50, r.ExecuteP50 = pct(previews, 0.5), pct(executes, 0.5)
	return r
}

// requestTimeout bounds one request of a client.
const requestTimeout = 30 * time.Second

// pair does one preview -> execute and, when measuring, records it.
func pair(c *conn, path, content string, out *[]sample, measuring bool, t0 time.Time) error {
	body, _ := json.Marshal(map[string]any{"name": "workspace_apply_patch", "input": map[string]any{"path": path, "content": content}})
	var pv struct {
		Token string `json:"token"`
	}
	if err := do(c, "/v1/actions/preview", body, &pv); err != nil {
		return fmt.Errorf("preview: %w", err)
	}
	t1 := time.Now()
	var obs struct {
		Status, Code, Message string
	}
	if err := do(c, "/v1/actions/execute/"+pv.Token, nil, &obs); err != nil {
		return fmt.Errorf("execute: %w", err)
	}
	if obs.Status != "ok" {
		return fmt.Errorf("execute: status %s %s: %s", obs.Status, obs.Code, obs.Message)
	}
	t2 := time.Now()
	// Samples that started before measuring began are dropped with it.
	if measuring {
		*out = append(*out, sample{t2.Sub(t0), t1.Sub(t0), t2.Sub(t1)})
	}
	return nil
}

func do(c *conn, path string, body []byte, into any) error {
	status, data, err := c.post(path, body)
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("HTTP %d: %.200s", status, data)
	}
	return json.Unmarshal(data, into)
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	i := int(float64(len(d)-1) * p)
	return d[i]
}

// startInProcess serves the API on 127.0.0.1:0 with the dev profile, a
// temporary workspace and JSONL audit log, and store.
func startInProcess(ctx context.Context, store, auditMode string) (base, key string, stop func(), err error) {
	dir, err := os.MkdirTemp("", "harness-load-")
	if err != nil {
		return "", "", nil, err
	}
	cleanup := []func(){func() { os.RemoveAll(dir) }}
	stop = func() {
		for i := len(cleanup) - 1; i >= 0; i-- {
			cleanup[i]()
		}
	}
	fail := func(err error) (string, string, func(), error) { stop(); return "", "", nil, err }
	root := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fail(err)
	}
	var kb [24]byte
	rand.Read(kb[:])
	key = "load_" + hex.EncodeToString(kb[:])
	sum := sha256.Sum256([]byte(key))

	cfg := &config.Config{}
	cfg.Harness.Workspace.Root = root
	cfg.Harness.Trusted.Store = store
	cfg.Harness.Audit.Path = filepath.Join(dir, "audit.jsonl")
	cfg.Harness.Auth.Keys = []config.AuthKey{{Principal: "load", SHA256: hex.EncodeToString(sum[:]), Permissions: []string{"agent:execute", "agent:trusted"}}}
	if err := cfg.Validate("harness-load"); err != nil {
		return fail(err)
	}
	cfg.Resolve()

	hmacKey := make([]byte, 32)
	rand.Read(hmacKey)
	if auditMode != "jsonl" && auditMode != "none" {
		return fail(fmt.Errorf("-audit %q: want jsonl or none", auditMode))
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := pipeline.Open(ctx, cfg, pipeline.Options{Logger: quiet, Key: hmacKey, NoAudit: auditMode == "none", Trusted: true})
	if err != nil {
		return fail(err)
	}
	cleanup = append(cleanup, func() { p.Close() })
	keys, err := trusted.NewKeys(cfg.Harness.Auth.Keys)
	if err != nil {
		return fail(err)
	}
	srv, err := trusted.NewServer(trusted.ServerOptions{Service: p.Trusted, Keys: keys, Metrics: p.Metrics, Logger: quiet})
	if err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	cleanup = append(cleanup, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	})
	return "http://" + ln.Addr().String(), key, stop, nil
}
