package main

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// conn is one client's keep-alive HTTP/1.1 connection to the server. The
// clients share the machine with the server they measure, so each speaks
// HTTP on its own connection from its own goroutine, without the
// connection pool and the reader and writer goroutines of net/http's
// client: the measuring costs the machine less.
type conn struct {
	addr, host string
	prefix     string // the base URL's path, before every request's
	tls        bool
	auth       string
	timeout    time.Duration
	c          net.Conn
	br         *bufio.Reader
	bw         *bufio.Writer
}

func newConn(base, key string, timeout time.Duration) (*conn, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("-addr %q: want an http:// or https:// URL", base)
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"http": "80", "https": "443"}[u.Scheme])
	}
	return &conn{addr: addr, host: u.Host, prefix: strings.TrimSuffix(u.Path, "/"), tls: u.Scheme == "https",
		auth: "Bearer " + key, timeout: timeout}, nil
}

// post sends a POST of body to path and returns the response status and
// body. On any error the connection is dropped, and the next call dials
// again.
func (c *conn) post(path string, body []byte) (int, []byte, error) {
	if c.c == nil {
		if err := c.dial(); err != nil {
			return 0, nil, err
		}
	}
	status, data, keep, err := c.roundTrip(path, body)
	if err != nil || !keep {
		c.close()
	}
	return status, data, err
}

func (c *conn) dial() error {
	d := net.Dialer{Timeout: c.timeout}
	var nc net.Conn
	var err error
	if c.tls {
		nc, err = tls.DialWithDialer(&d, "tcp", c.addr, nil)
	} else {
		nc, err = d.Dial("tcp", c.addr)
	}
	if err != nil {
		return err
	}
	c.c, c.br, c.bw = nc, bufio.NewReader(nc), bufio.NewWriter(nc)
	return nil
}

func (c *conn) roundTrip(path string, body []byte) (status int, data []byte, keep bool, err error) {
	c.c.SetDeadline(time.Now().Add(c.timeout))
	w := c.bw
	w.WriteString("POST ")
	w.WriteString(c.prefix)
	w.WriteString(path)
	w.WriteString(" HTTP/1.1\r\nHost: ")
	w.WriteString(c.host)
	w.WriteString("\r\nAuthorization: ")
	w.WriteString(c.auth)
	w.WriteString("\r\nContent-Type: application/json\r\nContent-Length: ")
	w.WriteString(strconv.Itoa(len(body)))
	w.WriteString("\r\n\r\n")
	w.Write(body)
	if err := w.Flush(); err != nil {
		return 0, nil, false, err
	}
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, nil, false, err
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength))
	}
	_, err = buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, nil, false, err
	}
	return resp.StatusCode, buf.Bytes(), !resp.Close, nil
}

func (c *conn) close() {
	if c.c != nil {
		c.c.Close()
		c.c = nil
	}
}
