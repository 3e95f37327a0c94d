package app

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	httppprof "net/http/pprof"
	"time"

	"github.com/reloader/reloader/internal/cli"
	"github.com/reloader/reloader/metrics"
)

// serveHTTP serves metrics and health on --port, and profiles there or on --pprof-addr; the
// function returned stops both.
func serveHTTP(c *cli.Flags, m *metrics.Metrics, ready func() error, log *slog.Logger) (stop func(), err error) {
	srv, err := serve(c.Port, c.EnablePprof && c.PprofAddr == "", m, ready, log)
	if err != nil {
		return nil, err
	}
	if !c.EnablePprof || c.PprofAddr == "" {
		return func() { srv.Close() }, nil
	}
	profiles, err := servePprof(c.PprofAddr, log)
	if err != nil {
		srv.Close()
		return nil, err
	}
	return func() { srv.Close(); profiles.Close() }, nil
}

func serve(port int, pprof bool, m *metrics.Metrics, ready func() error, log *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	if pprof {
		profiles(mux)
	}
	mux.Handle("/metrics", m.Handler())
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/live", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") }) // stakater's probe path
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if err := ready(); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	srv, err := listen(fmt.Sprintf(":%d", port), mux, log)
	if err != nil {
		return nil, fmt.Errorf("--port: %w", err)
	}
	log.Info("serving metrics and health", "addr", srv.Addr)
	return srv, nil
}

// servePprof serves the profiles alone on --pprof-addr, as stakater does.
func servePprof(addr string, log *slog.Logger) (*http.Server, error) {
	mux := http.NewServeMux()
	profiles(mux)
	srv, err := listen(addr, mux, log)
	if err != nil {
		return nil, fmt.Errorf("--pprof-addr: %w", err)
	}
	log.Info("serving profiles", "addr", srv.Addr)
	return srv, nil
}

func profiles(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", httppprof.Index)
	mux.HandleFunc("/debug/pprof/profile", httppprof.Profile)
}

// listen serves h on addr in the background; the server's Addr is the address bound.
func listen(addr string, h http.Handler, log *slog.Logger) (*http.Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	srv := &http.Server{Addr: ln.Addr().String(), Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "addr", srv.Addr, "err", err)
		}
	}()
	return srv, nil
}
