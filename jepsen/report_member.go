package jepsen

import (
	"fmt"
	"html"
	"strings"
)

// registerHTML is porcupine's visualization of the register history,
// beside report.html.
const registerHTML = "register.html"

// memberLanes draws the "members" lane of the timeline: each node's time
// out of the group's configuration (a member fault's start to its end),
// with its steps as ticks; nothing without member faults. It returns the
// next lane's y.
func memberLanes(s *strings.Builder, evs []Event, x func(float64) float64, y, tmax float64) float64 {
	const laneH = 16.0
	var spans, ticks strings.Builder
	open := map[string]Event{}
	seen := false
	for _, e := range evs {
		if e.Type != EvFault || e.Kind != NemMember {
			continue
		}
		seen = true
		switch e.Phase {
		case "start":
			open[e.Detail] = e
		case "end":
			st, ok := open[e.Detail]
			if !ok {
				continue
			}
			delete(open, e.Detail)
			fmt.Fprintf(&spans, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\" opacity=\"0.6\"><title>%s out of the group %.1fs–%.1fs</title></rect>\n",
				x(st.T), y, max(1, x(e.T)-x(st.T)), laneH, faultColor[NemMember], html.EscapeString(st.Detail), st.T/1000, e.T/1000)
		case "step":
			col := "#000"
			if e.Error != "" {
				col = "#d62728"
			}
			fmt.Fprintf(&ticks, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.0f\" y2=\"%.0f\" stroke=\"%s\"><title>%.1fs %s %s</title></line>\n",
				x(e.T), x(e.T), y, y+laneH, col, e.T/1000, html.EscapeString(e.Detail), html.EscapeString(e.Error))
		}
	}
	for _, st := range open { // never healed
		fmt.Fprintf(&spans, "<rect x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"%.0f\" fill=\"%s\" opacity=\"0.6\"><title>%s never healed</title></rect>\n",
			x(st.T), y, max(1, x(tmax)-x(st.T)), laneH, faultColor[NemMember], html.EscapeString(st.Detail))
	}
	if !seen {
		return y
	}
	fmt.Fprintf(s, "<text x=\"2\" y=\"%.0f\">members</text>\n", y+12)
	s.WriteString(spans.String())
	s.WriteString(ticks.String())
	return y + laneH + 6
}

// registerSection is the report's consumer-offset register part: the
// verdict and porcupine's visualization, embedded and linked.
func registerSection(res *RunResult) string {
	r := res.Register
	if r.Ops == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("<h2>Consumer offsets as a register</h2>\n")
	fmt.Fprintf(&b, "<p>linearizable=%t (porcupine: %s; %d operations on %d keys, %d open). "+
		"Model: a register whose acknowledged writes may be lost, whose reads may not go back. "+
		"<a href=%q>porcupine's visualization</a></p>\n", r.Linearizable, html.EscapeString(r.Outcome), r.Ops, r.Keys, r.Open, registerHTML)
	fmt.Fprintf(&b, "<iframe src=%q width=\"100%%\" height=\"600\" style=\"border:1px solid #ccc\"></iframe>\n", registerHTML)
	return b.String()
}
