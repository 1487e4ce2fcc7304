package console

// The consumer group pages: the list (every broker group's subscription
// groups), one group's lag per queue and online clients, and the offset
// reset by time: a dry run first, then the same reset executed after an
// explicit confirmation.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/client"
)

type groupRow struct {
	Name    string
	Brokers []string
	client.GroupConfig
}

type groupsData struct {
	Groups []groupRow
	Filter string
}

func (s *Server) groups(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	d := &groupsData{Filter: strings.TrimSpace(r.URL.Query().Get("filter"))}
	p := page{Title: "Consumer groups", Nav: "groups", Data: d}
	all, err := s.adminOf(ctx).ListGroups(ctx, client.Target{})
	if err != nil {
		p.Error = err.Error()
		s.render(w, http.StatusBadGateway, "groups", p, false)
		return
	}
	index := map[string]int{}
	for _, g := range all {
		if d.Filter != "" && !strings.Contains(strings.ToLower(g.GroupName), strings.ToLower(d.Filter)) {
			continue
		}
		i, ok := index[g.GroupName]
		if !ok {
			i = len(d.Groups)
			index[g.GroupName] = i
			d.Groups = append(d.Groups, groupRow{Name: g.GroupName, GroupConfig: g.GroupConfig})
		}
		d.Groups[i].Brokers = append(d.Groups[i].Brokers, g.BrokerName)
	}
	sort.Slice(d.Groups, func(i, j int) bool { return d.Groups[i].Name < d.Groups[j].Name })
	s.render(w, http.StatusOK, "groups", p, false)
}

type groupData struct {
	Group       string
	Progress    *client.Progress
	ProgressErr string
	Conns       *client.ConsumerConnections
	ConnsErr    string
	Topics      []string // the topics the group has offsets on, for the reset form
	Now         string   // the reset form's default time (UTC)
}

func (s *Server) group(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	name := r.PathValue("group")
	d := &groupData{Group: name, Now: time.Now().UTC().Format(dateTimeLocal)}
	p := page{Title: "Group " + name, Nav: "groups", Data: d}
	prog, err := s.adminOf(ctx).ConsumerProgress(ctx, name, "")
	switch {
	case errors.Is(err, client.ErrNoSuchGroup):
		d.ProgressErr = "no offsets on any broker group: the group has consumed nothing, or does not exist"
	case err != nil:
		d.ProgressErr = err.Error()
	default:
		d.Progress = prog
		seen := map[string]bool{}
		for _, q := range prog.Queues {
			if !seen[q.Topic] {
				seen[q.Topic] = true
				d.Topics = append(d.Topics, q.Topic)
			}
		}
	}
	conns, err := s.adminOf(ctx).ConsumerConnections(ctx, name)
	switch {
	case errors.Is(err, client.ErrNoSuchGroup):
		d.ConnsErr = "no client online"
	case err != nil:
		d.ConnsErr = err.Error()
	default:
		d.Conns = conns
	}
	s.render(w, http.StatusOK, "group", p, false)
}

// dateTimeLocal is the layout of <input type="datetime-local" step="1">.
const dateTimeLocal = "2006-01-02T15:04:05"

// parseResetTime reads the reset form's time: "end" (each queue's end,
// -1), milliseconds since the epoch, RFC 3339, or a datetime-local value
// taken as UTC.
func parseResetTime(v string, toEnd bool) (int64, error) {
	v = strings.TrimSpace(v)
	if toEnd || v == "end" || v == "-1" {
		return -1, nil
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return n, nil
	}
	for _, layout := range []string{time.RFC3339Nano, dateTimeLocal, "2006-01-02T15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
			return t.UnixMilli(), nil
		}
	}
	return 0, fmt.Errorf("time %q: want YYYY-MM-DDTHH:MM:SS (UTC), RFC 3339 or milliseconds", v)
}

type resetData struct {
	Group, Topic string
	Timestamp    int64
	OnlyBackward bool
	Executed     bool
	Rows         []client.OffsetReset
	Moves        int // rows whose offset changes
}

func (s *Server) resetDryRun(w http.ResponseWriter, r *http.Request) { s.reset(w, r, false) }

func (s *Server) resetExecute(w http.ResponseWriter, r *http.Request) { s.reset(w, r, true) }

// reset runs the dry run, or (execute) the reset the dry run showed, which
// needs the form's confirm=yes.
func (s *Server) reset(w http.ResponseWriter, r *http.Request, execute bool) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	f := r.PostForm // parsed by the CSRF check
	d := &resetData{Group: r.PathValue("group"), Topic: strings.TrimSpace(f.Get("topic")), OnlyBackward: f.Get("onlyBackward") == "yes"}
	p := page{Title: "Reset offsets of " + d.Group, Nav: "groups", Data: d}
	fail := func(code int, err error) {
		p.Error = err.Error()
		s.render(w, code, "reset", p, false)
	}
	if d.Topic == "" {
		fail(http.StatusBadRequest, errors.New("no topic"))
		return
	}
	ts, err := parseResetTime(f.Get("time"), f.Get("toEnd") == "yes")
	if err != nil {
		fail(http.StatusBadRequest, err)
		return
	}
	d.Timestamp = ts
	if execute && f.Get("confirm") != "yes" {
		fail(http.StatusBadRequest, errors.New("not executed: tick the confirmation first"))
		return
	}
	rows, err := s.adminOf(ctx).ResetOffsetByTime(ctx, client.ResetRequest{Group: d.Group, Topic: d.Topic, Timestamp: ts, Execute: execute, OnlyBackward: d.OnlyBackward})
	d.Rows, d.Executed = rows, execute && err == nil
	for _, row := range rows {
		if row.Old != row.New {
			d.Moves++
		}
	}
	if err != nil {
		fail(http.StatusBadGateway, err)
		return
	}
	s.render(w, http.StatusOK, "reset", p, false)
}
