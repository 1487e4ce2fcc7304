package console

import (
	"encoding/json"
	"net/http"
)

// chart is the live chart page; its script draws /api/metrics.
func (s *Server) chart(w http.ResponseWriter, _ *http.Request) {
	s.render(w, http.StatusOK, "chart", page{Title: "Live", Nav: "chart", RefreshMS: s.cfg.SampleEvery.Milliseconds()}, false)
}

// metricsJSON answers the sampler's points.
func (s *Server) metricsJSON(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(s.sampler.snapshot())
}
