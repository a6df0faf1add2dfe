package bridge

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestCheckOrigin(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	h := CheckOrigin(ok)
	cases := []struct {
		origin string
		want   int
	}{
		{"", 204},
		{"http://localhost:3000", 204},
		{"http://127.0.0.1:8080", 204},
		{"https://[::1]:8443", 204},
		{"https://evil.example", 403},
		{"http://127.0.0.1.evil.example", 403},
		{"http://localhost.evil.example", 403},
		{"null", 403},
		{"file://", 403},
		{"http://10.0.0.5", 403},
	}
	for _, c := range cases {
		r := httptest.NewRequest("POST", "/mcp", nil)
		if c.origin != "" {
			r.Header.Set("Origin", c.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("Origin %q: %d, want %d", c.origin, w.Code, c.want)
		}
	}
}
