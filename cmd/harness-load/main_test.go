package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/harness-runtime/harness/internal/testkit"
)

// TestLoadInProcess runs the tool briefly against its in-process server
// for each store and checks that it measured pairs without errors.
func TestLoadInProcess(t *testing.T) {
	for _, store := range []string{"memory", testkit.RedisURL()} {
		t.Run(storeKind(store), func(t *testing.T) {
			if store != "memory" {
				testkit.Redis(t) // skips, or fails when CI=true, without Redis
			}
			var out, errb bytes.Buffer
			code := run(context.Background(), []string{"-store", store, "-clients", "4", "-duration", "700ms", "-warmup", "200ms", "-json"}, &out, &errb)
			require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errb.String(), out.String())
			var r result
			require.NoError(t, json.Unmarshal(out.Bytes(), &r))
			require.Equal(t, storeKind(store), r.Store)
			require.Greater(t, r.Pairs, 0)
			require.Zero(t, r.Errors)
			require.Greater(t, r.PairsPerSec, 0.0)
			require.LessOrEqual(t, r.P50, r.P99)
			require.LessOrEqual(t, r.P99, r.Max)
		})
	}
}

// TestLoadSameDir runs the one-directory layout.
func TestLoadSameDir(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-same-dir", "-clients", "4", "-duration", "500ms", "-warmup", "100ms", "-json"}, &out, &errb)
	require.Equal(t, 0, code, "stderr: %s\nstdout: %s", errb.String(), out.String())
	var r result
	require.NoError(t, json.Unmarshal(out.Bytes(), &r))
	require.True(t, r.SameDir)
	require.Greater(t, r.Pairs, 0)
	require.Zero(t, r.Errors)
}

func TestLoadTargetsFail(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-clients", "1", "-duration", "300ms", "-warmup", "0s", "-min-rate", "1e9"}, &out, &errb)
	require.Equal(t, 1, code)
	require.Contains(t, errb.String(), "below the target")
	require.Contains(t, out.String(), "pairs/s")
}

func TestLoadUsage(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"-h"}, 0},
		{"no clients", []string{"-clients", "0"}, 2},
		{"bad flag", []string{"-nope"}, 2},
		{"bad audit", []string{"-audit", "carrier-pigeon", "-duration", "10ms"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			require.Equal(t, c.want, run(context.Background(), c.args, &out, &errb), errb.String())
		})
	}
}

func TestPercentile(t *testing.T) {
	d := []time.Duration{5, 1, 4, 2, 3, 10, 9, 8, 7, 6}
	require.Equal(t, time.Duration(5), pct(d, 0.5))
	require.Equal(t, time.Duration(9), pct(d, 0.99))
	require.Equal(t, time.Duration(10), pct(d, 1))
	require.Zero(t, pct(nil, 0.5))
	require.True(t, strings.HasSuffix(ms(1500*time.Microsecond), "ms"))
}
