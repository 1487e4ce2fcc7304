package jepsen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/ledgermq/ledgermq/internal/harness/procs"
)

// faultColor is each nemesis's colour in the timeline.
var faultColor = map[string]string{
	NemKill: "#d62728", NemPause: "#9467bd", NemPartition: "#ff7f0e", NemOneWay: "#e377c2",
	NemLoss: "#8c564b", NemDelay: "#bcbd22", NemNamesrv: "#17becf", NemTransfer: "#1f77b4",
	NemPower: "#000000", NemDiskFull: "#7f7f7f", NemMember: "#8c564b", NemHostile: "#e7ba52",
	NemGroupDown: "#393b79",
}

var roleColor = map[string]string{
	"leader": "#2ca02c", "follower": "#c7e9c0", "candidate": "#ffbb78", "down": "#d62728", "unreachable": "#ff9896",
	"shutdown": "#7f7f7f",
}

// WriteReport writes one self-contained HTML file: the verdict, the
// figures, the plan and an inline SVG timeline (faults, each node's role
// and term, throughput by outcome per second, lost messages at their
// send time).
func WriteReport(path string, p Plan, evs []Event, res *RunResult) error {
	var b bytes.Buffer
	verdict := res.VerdictLine()
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ledgermq jepsen</title>\n")
	b.WriteString("<style>body{font-family:sans-serif;margin:1em}pre{background:#f6f6f6;padding:.5em}" +
		".pass{color:#2ca02c}.fail{color:#d62728}svg text{font-size:11px}</style></head><body>\n")
	cls := "pass"
	if !res.Valid() {
		cls = "fail"
	}
	fmt.Fprintf(&b, "<h1 class=%q>%s</h1>\n", cls, html.EscapeString(verdict))
	shape := fmt.Sprintf("%d nodes", p.Nodes)
	if p.groups() > 1 {
		shape = fmt.Sprintf("%d broker groups (%s) of %d nodes", p.groups(), strings.Join(procs.GroupNames(p.groups()), ", "), p.Nodes)
	}
	checks := ""
	if res.ExactlyOnce {
		checks = "; exactly-once checked (no value stored twice within one broker group)"
	}
	fmt.Fprintf(&b, "<p>seed %d, %s, %v, nemeses %s; network faults by %s; %s%s.</p>\n",
		p.Seed, shape, p.Time, html.EscapeString(strings.Join(p.Nemeses, ",")), html.EscapeString(res.Mechanism),
		html.EscapeString(res.Security.String()), checks)
	fmt.Fprintf(&b, "<pre>%s</pre>\n", html.EscapeString(res.Summary()))
	b.WriteString(timelineSVG(p, evs, res))
	b.WriteString(registerSection(res))
	b.WriteString("<h2>Plan</h2>\n<pre>")
	plan, _ := json.MarshalIndent(p, "", "  ")
	b.WriteString(html.EscapeString(string(plan)))
	b.WriteString("</pre>\n<p>The history is history.jsonl beside this file; replay the plan with <code>ledgermq jepsen replay plan.json</code>.</p>\n</body></html>\n")
	return os.WriteFile(path, b.Bytes(), 0o644)
}

// timelineSVG draws the lanes over the run's time.
func timelineSVG(p Plan, evs []Event, res *RunResult) string {
	var tmax float64
	for _, e := range evs {
		tmax = max(tmax, e.T)
	}
	if tmax <= 0 {
		tmax = 1
	}
	const (
		left, width = 90.0, 1100.0
		laneH       = 16.0
	)
	x := func(t float64) float64 { return left + width*t/tmax }
	var nodes []string
	for g := range p.groups() {
		nodes = append(nodes, groupIDs(g, p.Nodes)...)
	}
	// One fault lane per group ("" in a one-group run).
	var lanes []string
	if p.groups() > 1 {
		lanes = procs.GroupNames(p.groups())
	} else {
		lanes = []string{""}
	}
	var s strings.Builder
	y := 20.0
	lane := func(name string) {
		fmt.Fprintf(&s, "<text x=\"2\" y=\"%.0f\">%s</text>\n", y+12, html.EscapeString(name))
	}
	// Seconds axis.
	for sec := 0.0; sec*1000 <= tmax; sec += 10 {
		fmt.Fprintf(&s, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"10\" y2=\"100%%\" stroke=\"#eee\"/><text x=\"%.1f\" y=\"10\">%.0fs</text>\n", x(sec*1000), x(sec*1000), x(sec*1000)+2, sec)
	}
	// Faults.
	for _, g := range lanes {
		if g == "" {
			lane("faults")
		} else {
			lane("faults " + strings.TrimPrefix(g, "broker-"))
		}
		y = faultLane(&s, evs, g, x, y, laneH)
	}
	y = memberLanes(&s, evs, x, y, tmax)
	// Roles per node.
	for _, n := range nodes {
		lane(n)
		var last *Event
		flush := func(until float64) {
			if last == nil {
				return
			}
			fmt.Fprintf(&s, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\"><title>%s %s term %d from %.1fs</title></rect>\n",
				x(last.T), y, max(0.5, x(until)-x(last.T)), laneH, roleColorOf(last.Role), n, html.EscapeString(last.Role), last.Term, last.T/1000)
		}
		for i := range evs {
			e := &evs[i]
			if e.Type != EvStatus || e.Node != n {
				continue
			}
			flush(e.T)
			if last != nil && e.Term != last.Term && e.Term != 0 {
				fmt.Fprintf(&s, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#000\"><title>term %d</title></line>\n", x(e.T), x(e.T), y, y+laneH, e.Term)
			}
			last = e
		}
		flush(tmax)
		y += laneH + 2
	}
	y += 6
	// Throughput per second, stacked by outcome.
	lane("sends/s")
	secs := int(math.Ceil(tmax/1000)) + 1
	per := map[string][]int{OK: make([]int, secs), Failed: make([]int, secs), Unknown: make([]int, secs)}
	peak := 1
	for _, e := range evs {
		if e.Type == EvSend {
			i := int(e.T / 1000)
			if c, ok := per[e.Outcome]; ok && i >= 0 && i < secs {
				c[i]++
			}
		}
	}
	for i := range secs {
		peak = max(peak, per[OK][i]+per[Failed][i]+per[Unknown][i])
	}
	const tpH = 80.0
	for i := range secs {
		base := y + tpH
		for _, o := range []string{OK, Unknown, Failed} {
			v := per[o][i]
			if v == 0 {
				continue
			}
			hgt := tpH * float64(v) / float64(peak)
			col := map[string]string{OK: "#2ca02c", Unknown: "#ff7f0e", Failed: "#d62728"}[o]
			fmt.Fprintf(&s, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>%ds: %d %s</title></rect>\n",
				x(float64(i)*1000), base-hgt, max(0.5, x(1000)-x(0)-0.5), hgt, col, i, v, o)
			base -= hgt
		}
	}
	fmt.Fprintf(&s, "<text x=\"2\" y=\"%.0f\">peak %d</text>\n", y+28, peak)
	y += tpH + 6
	// Lost messages at their send time.
	lane("lost")
	lost := map[string]bool{}
	for _, v := range res.LostValues {
		lost[v] = true
	}
	for _, e := range evs {
		if e.Type == EvSend && lost[e.Value] {
			fmt.Fprintf(&s, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"#d62728\"><title>lost %s (acked by %s)</title></line>\n",
				x(e.Invoke), x(e.Invoke), y, y+laneH, html.EscapeString(e.Value), html.EscapeString(e.Node))
		}
	}
	y += laneH + 10
	var legend []string
	for _, k := range slices.Sorted(mapKeys(faultColor)) {
		legend = append(legend, fmt.Sprintf("<tspan fill=\"%s\">■ %s</tspan>", faultColor[k], k))
	}
	fmt.Fprintf(&s, "<text x=\"%.0f\" y=\"%.0f\">%s  roles: <tspan fill=\"#2ca02c\">■ leader</tspan> <tspan fill=\"#c7e9c0\">■ follower</tspan> <tspan fill=\"#ffbb78\">■ candidate</tspan> <tspan fill=\"#d62728\">■ down</tspan> <tspan fill=\"#ff9896\">■ unreachable</tspan></text>\n",
		left, y+4, strings.Join(legend, " "))
	y += 14
	return fmt.Sprintf("<h2>Timeline</h2>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\">\n%s</svg>\n", left+width+10, y+10, s.String())
}

// faultLane draws group g's faults ("" every fault) in a lane at y and
// returns the next lane's y.
func faultLane(s *strings.Builder, evs []Event, g string, x func(float64) float64, y, laneH float64) float64 {
	open := map[string]Event{}
	for _, e := range evs {
		if e.Type != EvFault || (e.Phase != "start" && e.Phase != "end") || (g != "" && e.Group != g) {
			continue
		}
		if e.Phase == "start" {
			open[e.Detail] = e
			continue
		}
		st, ok := open[e.Detail]
		if !ok {
			continue
		}
		delete(open, e.Detail)
		fmt.Fprintf(s, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\" opacity=\"0.8\"><title>%s on %s (leader %s) %.1fs–%.1fs</title></rect>\n",
			x(st.T), y, max(1, x(e.T)-x(st.T)), laneH, faultColor[st.Kind], html.EscapeString(st.Detail),
			html.EscapeString(strings.Join(st.Targets, ",")), html.EscapeString(st.Leader), st.T/1000, e.T/1000)
	}
	return y + laneH + 6
}

func roleColorOf(role string) string {
	if c, ok := roleColor[role]; ok {
		return c
	}
	return "#ccc"
}
