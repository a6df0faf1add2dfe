package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestConnKeepAliveAndRedial checks the client's HTTP/1.1: requests as
// net/http servers read them, one connection kept while the server keeps
// it, a new one after the server closes it.
func TestConnKeepAliveAndRedial(t *testing.T) {
	var conns atomic.Int64
	var n atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != "POST" || r.Header.Get("Authorization") != "Bearer k" || r.Header.Get("Content-Type") != "application/json" {
			http.Error(w, "bad request line or headers", 400)
			return
		}
		if n.Add(1)%3 == 0 {
			w.Header().Set("Connection", "close")
		}
		w.Write(append([]byte(r.URL.Path+" "), body...))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()

	c, err := newConn(srv.URL, "k", 5*time.Second)
	require.NoError(t, err)
	defer c.close()
	for i := 0; i < 9; i++ {
		status, data, err := c.post("/p", []byte(`{"i":1}`))
		require.NoError(t, err)
		require.Equal(t, 200, status)
		require.Equal(t, `/p {"i":1}`, string(data))
	}
	// Every third response closed its connection: three connections.
	require.Equal(t, int64(3), conns.Load())

	status, data, err := c.post("/empty", nil)
	require.NoError(t, err)
	require.Equal(t, 200, status)
	require.True(t, bytes.HasPrefix(data, []byte("/empty")))

	// A base URL's path comes before the request's.
	pc, err := newConn(srv.URL+"/api/", "k", 5*time.Second)
	require.NoError(t, err)
	defer pc.close()
	_, data, err = pc.post("/v1/x", nil)
	require.NoError(t, err)
	require.Equal(t, "/api/v1/x ", string(data))
}

func TestConnDeadServer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := newConn(url, "k", time.Second)
	require.NoError(t, err)
	_, _, err = c.post("/p", nil)
	require.Error(t, err)
}

func TestLoadBadAddr(t *testing.T) {
	var out, errb bytes.Buffer
	require.Equal(t, 2, run(context.Background(), []string{"-addr", "ftp://example.org", "-duration", "10ms"}, &out, &errb))
	require.Contains(t, errb.String(), "http://")
}
