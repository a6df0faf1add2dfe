package console

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// This file is a small W3C WebDriver client, enough to drive Debian's
// chromium through chromedriver: open a session, navigate, find
// elements, click, type, run a script, take screenshots, resize.

const (
	chromiumPath     = "/usr/bin/chromium"
	chromedriverPath = "/usr/bin/chromedriver"
)

// needBrowser returns the paths of chromium and chromedriver, or skips the
// test (fails it under CI=true, where make tools installs them).
func needBrowser(t *testing.T) (string, string) {
	t.Helper()
	chromium, driver := os.Getenv("HARNESS_CHROMIUM"), os.Getenv("HARNESS_CHROMEDRIVER")
	if chromium == "" {
		chromium = chromiumPath
	}
	if driver == "" {
		driver = chromedriverPath
	}
	for _, p := range []string{chromium, driver} {
		if _, err := os.Stat(p); err != nil {
			msg := fmt.Sprintf("the browser test needs %s (make tools installs chromium and chromium-driver): %v", p, err)
			if os.Getenv("CI") == "true" {
				t.Fatal(msg)
			}
			t.Skip(msg)
		}
	}
	return chromium, driver
}

// wd is one WebDriver session.
type wd struct {
	t    *testing.T
	base string // http://127.0.0.1:port/session/<id>
	hc   *http.Client
}

// startBrowser starts chromedriver and a headless chromium session with a
// fresh profile and everything that would reach the network turned off.
func startBrowser(t *testing.T) *wd {
	t.Helper()
	chromium, driver := needBrowser(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	var logs bytes.Buffer
	cmd := exec.Command(driver, "--port="+strconv.Itoa(port), "--allowed-ips=127.0.0.1")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() && logs.Len() > 0 {
			t.Logf("chromedriver: %s", tail(logs.String(), 2000))
		}
	})
	root := "http://127.0.0.1:" + strconv.Itoa(port)
	hc := &http.Client{Timeout: 60 * time.Second}
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := hc.Get(root + "/status")
		if err == nil {
			res.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("chromedriver did not start: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	caps := map[string]any{"capabilities": map[string]any{"alwaysMatch": map[string]any{
		"browserName": "chrome",
		"goog:chromeOptions": map[string]any{
			"binary": chromium,
			"args": []string{
				"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
				"--disable-background-networking", "--disable-component-update", "--disable-sync",
				"--disable-dev-shm-usage", "--user-data-dir=" + t.TempDir(), "--window-size=1280,900",
			},
		},
	}}}
	var created struct {
		SessionID string `json:"sessionId"`
	}
	w := &wd{t: t, hc: hc}
	w.call("POST", root+"/session", caps, &created)
	if created.SessionID == "" {
		t.Fatal("chromedriver made no session")
	}
	w.base = root + "/session/" + created.SessionID
	t.Cleanup(func() {
		req, _ := http.NewRequest("DELETE", w.base, nil)
		if res, err := hc.Do(req); err == nil {
			res.Body.Close()
		}
	})
	return w
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// call sends one WebDriver command and decodes its "value" into out.
func (w *wd) call(method, url string, body, out any) {
	w.t.Helper()
	if err := w.try(method, url, body, out); err != nil {
		w.t.Fatal(err)
	}
}

func (w *wd) try(method, url string, body, out any) error {
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, url, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := w.hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	var env struct {
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("%s %s: %d %s", method, url, res.StatusCode, tail(string(data), 300))
	}
	if res.StatusCode != http.StatusOK {
		var e struct {
			Error string `json:"error"`
		}
		json.Unmarshal(env.Value, &e)
		return fmt.Errorf("%s %s: %d %s: %s", method, url, res.StatusCode, e.Error, tail(string(env.Value), 500))
	}
	if out != nil {
		return json.Unmarshal(env.Value, out)
	}
	return nil
}

func (w *wd) open(url string) {
	w.t.Helper()
	w.call("POST", w.base+"/url", map[string]string{"url": url}, nil)
}

// size sets the window's outer size.
func (w *wd) size(width, height int) {
	w.t.Helper()
	w.call("POST", w.base+"/window/rect", map[string]int{"width": width, "height": height}, nil)
}

// find waits for an element matching css that is displayed and returns
// its reference.
func (w *wd) find(css string) string {
	w.t.Helper()
	var id string
	w.waitFor("element "+css+" shown", func() bool {
		var el map[string]string
		if err := w.try("POST", w.base+"/element", map[string]string{"using": "css selector", "value": css}, &el); err != nil {
			return false
		}
		for _, v := range el {
			id = v
		}
		var shown bool
		if err := w.try("GET", w.base+"/element/"+id+"/displayed", nil, &shown); err != nil {
			return false
		}
		return shown
	})
	return id
}

// click clicks the first element matching css. The console redraws its
// list as approvals come and go: an element found just before a redraw is
// gone by the click (404, stale element), and is then looked up again.
func (w *wd) click(css string) {
	w.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := w.try("POST", w.base+"/element/"+w.find(css)+"/click", map[string]any{}, nil)
		if err == nil {
			return
		}
		if !strings.Contains(err.Error(), " stale element reference: ") || time.Now().After(deadline) {
			w.t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (w *wd) typeInto(css, text string) {
	w.t.Helper()
	id := w.find(css)
	w.call("POST", w.base+"/element/"+id+"/clear", map[string]any{}, nil)
	w.call("POST", w.base+"/element/"+id+"/value", map[string]string{"text": text}, nil)
}

// js runs script (a function body) with args and decodes its result.
func (w *wd) js(out any, script string, args ...any) {
	w.t.Helper()
	if args == nil {
		args = []any{}
	}
	w.call("POST", w.base+"/execute/sync", map[string]any{"script": script, "args": args}, out)
}

// text returns the textContent of the first element matching css ("" if
// none).
func (w *wd) text(css string) string {
	w.t.Helper()
	var s string
	w.js(&s, `const e = document.querySelector(arguments[0]); return e ? e.textContent : "";`, css)
	return s
}

// waitFor polls cond until it holds, failing after 15 seconds.
func (w *wd) waitFor(what string, cond func() bool) {
	w.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			w.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitText waits until the textContent of css contains want.
func (w *wd) waitText(css, want string) {
	w.t.Helper()
	w.waitFor(fmt.Sprintf("%s to show %q", css, want), func() bool { return strings.Contains(w.text(css), want) })
}

// screenshot saves a PNG of the page to path when HARNESS_SCREENSHOTS=1.
func (w *wd) screenshot(path string) {
	w.t.Helper()
	if os.Getenv("HARNESS_SCREENSHOTS") != "1" {
		return
	}
	var b64 string
	w.call("GET", w.base+"/screenshot", nil, &b64)
	png, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		w.t.Fatal(err)
	}
	w.t.Logf("screenshot %s (%d bytes)", path, len(png))
}
