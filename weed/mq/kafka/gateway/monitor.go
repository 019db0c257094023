package gateway

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seaweedfs/seaweedfs/weed/stats"
)

// readyTimeout bounds a readiness check.
const readyTimeout = 3 * time.Second

// Ready reports whether the gateway can serve clients: it is accepting
// connections and its SeaweedFS cluster answers (Options.ClusterReady).
func (s *Server) Ready(ctx context.Context) error {
	if s.closing.Load() {
		return errors.New("shutting down")
	}
	if s.opts.ClusterReady == nil {
		return nil
	}
	return s.opts.ClusterReady(ctx)
}

// MonitorHandler serves the monitoring endpoints: /metrics (Prometheus),
// /health (the process is alive: always 200) and /ready (200 when Ready,
// 503 with the reason otherwise), for load balancers and orchestrators.
func (s *Server) MonitorHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(stats.Gather, promhttp.HandlerOpts{}))
	mux.HandleFunc("/health", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n")) //nolint:errcheck // the prober may be gone
	})
	mux.HandleFunc("/ready", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
		defer cancel()
		if err := s.Ready(ctx); err != nil {
			http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n")) //nolint:errcheck // the prober may be gone
	})
	return mux
}
