package console

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// signInBrowser opens the console in w and signs in with key.
func signInBrowser(w *wd, base, key string) {
	w.t.Helper()
	w.open(base + "/console/")
	w.typeInto("#key", key)
	w.click("#signin-form button[type=submit]")
	w.find("#app")
}

// The page in a real browser, against the fake service: sign-in, the
// pending list, a diff with line numbers and colours, hostile content
// shown as text with its invisible characters made visible, a decision
// from a click, and the layout at a phone's width.
func TestBrowserConsoleRendersInert(t *testing.T) {
	w := startBrowser(t)
	hostile := pendingView("apr_hostile", "agent", "", "s-1")
	hostile.CreatedAt = hostile.CreatedAt.Add(time.Minute)
	hostile.Input = map[string]any{"path": "x.sh", "content": "<script>window.pwned=1</script>\u202e# harmless\n"}
	hostile.Preview = map[string]any{
		"diff":  "--- a/x.sh\n+++ b/x.sh\n@@ -3,2 +3,2 @@\n keep\n-<img src=x onerror=\"window.pwned=2\">\n+<script>window.pwned=1</script>\u202e# harmless\n",
		"files": []any{map[string]any{"path": "x.sh", "op": "modify", "added": 1, "removed": 1}},
	}
	cmd := pendingView("apr_cmd", "agent", "", "s-2")
	cmd.Action = "workspace_run_shell"
	cmd.Preview = map[string]any{"argv": []any{"go", "test", "./..."}, "program": "/usr/bin/go", "sandbox": "full", "no_network": true,
		"sandbox_write": []any{"/work"}}
	rp := fakeReplay{"s-1": {json.RawMessage(`{"event_type":"pre_action","timestamp":"2026-11-23T22:00:00Z","payload":{"tool_name":"workspace_apply_patch\u202e<b>x</b>"}}`)}}
	f := newFixture(t, Options{Replay: rp}, cmd, hostile)

	w.open(f.srv.URL + "/console/")
	w.find("#signin-form")
	w.typeInto("#key", keyAgent)
	w.click("#signin-form button[type=submit]")
	w.waitText("#signin-error", "agent:approve")

	w.typeInto("#key", keyApprover)
	w.click("#signin-form button[type=submit]")
	w.waitText("#count", "2")
	w.waitText("#d-title", "workspace_apply_patch")
	if got := w.text("#pending li:first-child .item-action"); got != "workspace_apply_patch" {
		t.Errorf("newest first: the first item is %q", got)
	}

	// The diff: a table per file, old and new line numbers, add/del rows.
	var rows [][]string
	w.js(&rows, `return [...document.querySelectorAll("#d-preview .diff tr")].map(r => [r.className, ...[...r.cells].map(c => c.textContent)]);`)
	want := [][]string{
		{"hunk", "", "", "@@ -3,2 +3,2 @@"},
		{"ctx", "3", "3", " keep"},
		{"del", "4", "", "−<img src=x onerror=\"window.pwned=2\">"},
		{"add", "", "4", "+<script>window.pwned=1</script>⟨U+202E⟩# harmless"},
	}
	if len(rows) != len(want) {
		t.Fatalf("diff rows %q", rows)
	}
	for i := range want {
		if strings.Join(rows[i], "|") != strings.Join(want[i], "|") {
			t.Errorf("diff row %d: %q, want %q", i, rows[i], want[i])
		}
	}
	// Inert: no element came from the content, nothing ran, the override
	// is a visible marker and not in the document.
	var probe struct {
		Pwned   any  `json:"pwned"`
		Scripts int  `json:"scripts"`
		Imgs    int  `json:"imgs"`
		Bold    int  `json:"bold"`
		RLO     bool `json:"rlo"`
		Markers int  `json:"markers"`
	}
	w.waitText("#events", "pre_action")
	w.js(&probe, `return {pwned: window.pwned === undefined ? null : window.pwned,
		scripts: document.querySelectorAll("main script").length, imgs: document.querySelectorAll("img").length,
		bold: document.querySelectorAll("#events b").length,
		rlo: document.body.textContent.includes("\u202e"), markers: document.querySelectorAll(".marker").length};`)
	if probe.Pwned != nil || probe.Scripts != 0 || probe.Imgs != 0 || probe.Bold != 0 || probe.RLO || probe.Markers < 2 {
		t.Errorf("hostile content not inert: %+v", probe)
	}

	// The command's argv and sandbox.
	w.click(`#pending button[data-id="apr_cmd"]`)
	w.waitText("#d-preview", "/usr/bin/go")
	var argv []string
	w.js(&argv, `return [...document.querySelectorAll("#d-preview .argv li")].map(e => e.textContent);`)
	if strings.Join(argv, " ") != "go test ./..." {
		t.Errorf("argv %q", argv)
	}
	if s := w.text("#d-preview"); !strings.Contains(s, "Network") || !strings.Contains(s, "none") {
		t.Errorf("the sandbox is not shown: %q", s)
	}

	// A denial needs a reason; then the fake service gets it.
	w.click("#deny")
	w.waitText("#decide-msg", "Say why")
	if f.fake.count() != 0 {
		t.Fatal("a denial without a reason was sent")
	}
	w.typeInto("#reason", "not now")
	w.click("#deny")
	w.waitText("#decide-msg", "Denied.")
	if len(f.fake.decisions) != 1 || f.fake.decisions[0].ID != "apr_cmd" || f.fake.decisions[0].D.Reason != "not now" ||
		f.fake.decisions[0].D.Method != "console" || f.fake.decisions[0].Approver.Name != "reviewer" {
		t.Errorf("decisions %+v", f.fake.decisions)
	}
	w.waitText("#count", "1")

	// Phone width: the list alone, then the approval with a way back, and
	// nothing wider than the screen.
	w.size(390, 844)
	w.click("#back")
	w.find("#pending")
	w.click(`#pending button[data-id="apr_hostile"]`)
	w.find("#approve-once")
	var overflow struct {
		Doc  int `json:"doc"`
		View int `json:"view"`
		List bool
	}
	w.js(&overflow, `return {doc: document.documentElement.scrollWidth, view: window.innerWidth,
		List: getComputedStyle(document.querySelector(".list")).display !== "none"};`)
	if overflow.Doc > overflow.View || overflow.List {
		t.Errorf("at 390px: page %dpx wide in a %dpx window, list shown beside the detail: %v", overflow.Doc, overflow.View, overflow.List)
	}
}
