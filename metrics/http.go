package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server serves /metrics, /healthz and /readyz on one listener.
type Server struct {
	ln  net.Listener
	srv *http.Server
	// done is closed when Serve returns.
	done chan struct{}
}

// Start serves reg on ln, or on a listener bound to addr when ln is nil (Serve); with
// neither it serves nothing and returns nil.
func Start(ln net.Listener, addr string, reg *Registry, readiness func() error) (*Server, error) {
	if ln == nil {
		if addr == "" {
			return nil, nil
		}
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("metrics listener %s: %w", addr, err)
		}
	}
	return Serve(ln, reg, readiness), nil
}

// Serve starts serving reg on ln: /metrics in the Prometheus text format (or
// OpenMetrics when asked), /healthz 200 while the process runs, /readyz 200 while
// readiness() returns nil and 503 with its error's text otherwise, then the registry's
// ready details (SetReadyDetails) either way.
func Serve(ln net.Listener, reg *Registry, readiness func() error) *Server {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg.Gatherer(), promhttp.HandlerOpts{
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		err := errors.New("starting")
		if readiness != nil {
			err = readiness()
		}
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte("not ready: " + err.Error() + "\n"))
		} else {
			_, _ = w.Write([]byte("ready\n"))
		}
		if reg != nil {
			for _, d := range reg.readyDetails() {
				_, _ = w.Write([]byte(d + "\n"))
			}
		}
	})
	mountPprof(mux)
	s := &Server{ln: ln, done: make(chan struct{}), srv: &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
	}}
	go func() {
		defer close(s.done)
		_ = s.srv.Serve(ln)
	}()
	return s
}

// Addr is the listener's address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Close stops the listener and open connections, waiting up to a second for scrapes in
// flight. It is idempotent.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		err = s.srv.Close()
	}
	<-s.done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
