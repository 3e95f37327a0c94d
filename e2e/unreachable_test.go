package e2e

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reloader/reloader/internal/dev/testcluster"
)

// gate is a TCP proxy to the API server that, while closed, drops every connection: the API
// server as seen from a reloader cut off from it. Closed hard, it stops listening, so that
// connections are refused, as from an API server that is down.
type gate struct {
	target string
	addr   string
	open   atomic.Bool
	mu     sync.Mutex
	ln     net.Listener      // nil while closed hard
	conns  map[net.Conn]bool // open client connections, cut when the gate closes
}

func newGate(t *testing.T, target string) *gate {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{target: target, addr: ln.Addr().String(), ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(g.closeHard)
	go g.serve(ln)
	return g
}

// close cuts every connection through the gate and drops new ones until it opens again.
func (g *gate) close() {
	g.open.Store(false)
	g.mu.Lock()
	defer g.mu.Unlock()
	for c := range g.conns {
		c.Close()
	}
}

// closeHard closes the gate and stops listening: new connections are refused.
func (g *gate) closeHard() {
	g.close()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln != nil {
		g.ln.Close()
		g.ln = nil
	}
}

// reopen listens again on the same address, after closeHard, and opens the gate.
func (g *gate) reopen(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ln == nil {
		ln, err := net.Listen("tcp", g.addr)
		if err != nil {
			t.Fatal(err)
		}
		g.ln = ln
		go g.serve(ln)
	}
	g.open.Store(true)
}

func (g *gate) serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		if !g.open.Load() {
			c.Close()
			continue
		}
		g.mu.Lock()
		g.conns[c] = true
		g.mu.Unlock()
		go func() {
			forward(c, g.target)
			g.mu.Lock()
			delete(g.conns, c)
			g.mu.Unlock()
		}()
	}
}

func forward(c net.Conn, target string) {
	defer c.Close()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(up, c) }()
	_, _ = io.Copy(c, up)
}

// kubeconfigThrough writes a copy of the cluster's kubeconfig that reaches the API server
// through the gate.
func kubeconfigThrough(t *testing.T, g *gate) string {
	t.Helper()
	return kubeconfigOf(t, cluster, g)
}

// kubeconfigOf is kubeconfigThrough for cluster c.
func kubeconfigOf(t *testing.T, c *testcluster.Cluster, g *gate) string {
	t.Helper()
	data, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	host := strings.TrimPrefix(c.Config.Host, "https://")
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(string(data), host, g.addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestStartedWhileTheAPIIsUnreachableWaitsUnreadyThenReloads(t *testing.T) {
	t.Parallel()
	ns := setup(t)
	g := newGate(t, strings.TrimPrefix(cluster.Config.Host, "https://"))
	p := launch(t, ns, kubeconfigThrough(t, g), "--coalesce-period", "0")

	waitFor(t, 20*time.Second, "the retry logged", func() (bool, error) {
		return strings.Contains(p.stderr.String(), "retrying until the API server answers"), nil
	})
	if _, exited := p.wait(0); exited {
		t.Fatalf("the reloader exited while the API was unreachable:\n%s", p.stderr.String())
	}
	if code := status(t, p.url("/readyz")); code == http.StatusOK {
		t.Fatal("/readyz answered 200 while the API was unreachable")
	}
	if code := status(t, p.url("/healthz")); code != http.StatusOK {
		t.Fatalf("/healthz answered %d while waiting; the process is alive and should say so", code)
	}

	g.open.Store(true)
	p.waitReady(t)
	waitFor(t, 10*time.Second, "first hashes recorded", func() (bool, error) { return stateRecorded(t, ns), nil })
	waitReloaded(t, ns, update(t, ns, "1"))
}

func status(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
