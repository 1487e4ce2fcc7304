package console

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// pageNames are the templates under assets/templates, each parsed with
// layout.html.
var pageNames = []string{"cluster", "topics", "topic", "groups", "group", "reset", "messages", "chart", "pending", "acl", "login"}

// page is what every template gets.
type page struct {
	Title string
	Nav   string // the navigation entry to mark
	CSRF  string
	// RefreshMS > 0 makes the page's #live element reload itself (the
	// template's "live" block) every RefreshMS.
	RefreshMS int64
	Error     string
	Data      any
	// SignIn: the console offers sign-in (Config.SignIn).
	SignIn bool
}

var funcs = template.FuncMap{
	"when":             when,
	"whenMS":           func(ms int64) string { return when(time.UnixMilli(ms)) },
	"join":             strings.Join,
	"pathq":            url.PathEscape,
	"delta":            func(old, new int64) int64 { return new - old },
	"maxSamples":       func() int { return maxSamples },
	"maxLeaderChanges": func() int { return maxLeaderChanges },
	"durMS":            func(ms int64) string { return (time.Duration(ms) * time.Millisecond).String() },
}

func parsePages() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(assets, "assets/templates/layout.html", "assets/templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", name, err)
		}
		out[name] = t
	}
	return out, nil
}

// render writes the named page (or, with fragment, only its "live"
// block) with status code.
func (s *Server) render(w http.ResponseWriter, code int, name string, p page, fragment bool) {
	p.CSRF = s.token
	p.SignIn = s.cfg.SignIn != nil
	block := "layout"
	if fragment {
		block = "live"
	}
	var buf bytes.Buffer
	if err := s.pages[name].ExecuteTemplate(&buf, block, p); err != nil {
		http.Error(w, "console: render "+name+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = buf.WriteTo(w)
}

// when formats a time for the pages (UTC, milliseconds); the zero time is "-".
func when(t time.Time) string {
	if t.IsZero() || t.UnixMilli() <= 0 {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// hexDump is hexdump -C's layout of b.
func hexDump(b []byte) string { return hex.Dump(b) }
