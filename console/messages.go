package console

// Message search: by id (offset msgId or UNIQ_KEY), by key, at a queue
// offset, or within a time range; each message with its properties and
// its body as text (when UTF-8) and as a hex dump.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/message"
)

// maxBodyShown bounds the body bytes a page shows of one message.
const maxBodyShown = 64 << 10

// maxTraced bounds the messages of one search whose trace is looked up
// (one QUERY_MESSAGE per broker group each).
const maxTraced = 8

// defaultSearchMax bounds a time-range search unless the form says.
const defaultSearchMax = 64

type msgView struct {
	ID, OffsetID   string
	Topic          string
	QueueID        int32
	QueueOffset    int64
	Stored, Born   time.Time
	StoreHost      string
	BornHost       string
	Tags, Keys     string
	ReconsumeTimes int32
	Size           int
	Text           string
	IsText         bool
	Hex            string
	Truncated      bool
	Props          []prop
	PhysicalOffset int64
	BodyCRC        uint32
	SysFlag, Flag  int32
	// Trace is the message's trace events (MessageTrace), oldest first;
	// NoTrace why there are none to show ("" when Trace is set).
	Trace   []client.TraceEvent
	NoTrace string
}

type prop struct{ Key, Value string }

func viewOf(m *message.Ext) msgView {
	v := msgView{ID: m.MsgID(), OffsetID: m.OffsetMsgID(), Topic: m.Topic, QueueID: m.QueueID, QueueOffset: m.QueueOffset,
		Stored: time.UnixMilli(m.StoreTimestamp), Born: time.UnixMilli(m.BornTimestamp), StoreHost: m.StoreHost.String(),
		BornHost: m.BornHost.String(), Tags: m.Tags(), Keys: strings.Join(m.Keys(), " "), ReconsumeTimes: m.ReconsumeTimes,
		Size: len(m.Body), PhysicalOffset: m.PhysicalOffset, BodyCRC: m.BodyCRC, SysFlag: m.SysFlag, Flag: m.Flag}
	body := m.Body
	if len(body) > maxBodyShown {
		body, v.Truncated = body[:maxBodyShown], true
	}
	v.IsText = utf8.Valid(body)
	if v.IsText {
		v.Text = string(body)
	}
	v.Hex = hexDump(body)
	for k, val := range m.Properties {
		v.Props = append(v.Props, prop{k, val})
	}
	sort.Slice(v.Props, func(i, j int) bool { return v.Props[i].Key < v.Props[j].Key })
	return v
}

// searchForm is the search's query string.
type searchForm struct {
	Mode, Topic, ID, Key, Broker string
	Queue, Offset                string
	Begin, End                   string // datetime-local, UTC
	Max                          string
}

type messagesData struct {
	Form     searchForm
	Searched bool
	Messages []msgView
	NotFound string
}

func formOf(q url.Values) searchForm {
	f := searchForm{Mode: q.Get("mode"), Topic: strings.TrimSpace(q.Get("topic")), ID: strings.TrimSpace(q.Get("id")),
		Key: strings.TrimSpace(q.Get("key")), Broker: strings.TrimSpace(q.Get("broker")), Queue: strings.TrimSpace(q.Get("queue")),
		Offset: strings.TrimSpace(q.Get("offset")), Begin: strings.TrimSpace(q.Get("begin")), End: strings.TrimSpace(q.Get("end")),
		Max: strings.TrimSpace(q.Get("max"))}
	if f.Mode == "" {
		f.Mode = "id"
	}
	return f
}

func (s *Server) messages(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	d := &messagesData{Form: formOf(r.URL.Query())}
	p := page{Title: "Messages", Nav: "messages", Data: d}
	if r.URL.Query().Get("search") == "" {
		s.render(w, http.StatusOK, "messages", p, false)
		return
	}
	d.Searched = true
	msgs, err := s.search(ctx, d.Form)
	switch {
	case errors.Is(err, client.ErrNoSuchMessage):
		d.NotFound = err.Error()
	case errors.Is(err, errBadSearch):
		p.Error = err.Error()
		s.render(w, http.StatusBadRequest, "messages", p, false)
		return
	case err != nil:
		p.Error = err.Error()
		s.render(w, http.StatusBadGateway, "messages", p, false)
		return
	}
	for _, m := range msgs {
		d.Messages = append(d.Messages, viewOf(m))
	}
	s.traces(ctx, d.Messages)
	if err == nil && len(msgs) == 0 {
		d.NotFound = "no message matches"
	}
	s.render(w, http.StatusOK, "messages", p, false)
}

// traces looks up the trace of the first maxTraced messages, in
// parallel, from the trace topic RocketMQ's clients write by default.
func (s *Server) traces(ctx context.Context, views []msgView) {
	var wg sync.WaitGroup
	for i := range views {
		v := &views[i]
		if i >= maxTraced {
			v.NoTrace = fmt.Sprintf("trace not looked up: only the first %d messages of a search are; search by this id to see it", maxTraced)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ev, err := s.adminOf(ctx).MessageTrace(ctx, client.DefaultTraceTopic, v.ID)
			switch {
			case errors.Is(err, client.ErrNoSuchTopic):
				v.NoTrace = "no trace: there is no trace topic " + client.DefaultTraceTopic + " (clients write traces when tracing is on)"
			case errors.Is(err, client.ErrNoSuchMessage) || err == nil && len(ev) == 0:
				v.NoTrace = "no trace: " + client.DefaultTraceTopic + " holds no event of this message"
			case err != nil:
				v.NoTrace = "trace look-up failed: " + err.Error()
			default:
				v.Trace = ev
			}
		}()
	}
	wg.Wait()
}

var errBadSearch = errors.New("search")

func badSearch(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errBadSearch, fmt.Sprintf(format, args...))
}

// search runs the form's look-up.
func (s *Server) search(ctx context.Context, f searchForm) ([]*message.Ext, error) {
	a := s.adminOf(ctx)
	switch f.Mode {
	case "id":
		if f.ID == "" {
			return nil, badSearch("give a message id")
		}
		m, err := a.MessageByID(ctx, f.Topic, f.ID)
		if err != nil {
			return nil, err
		}
		return []*message.Ext{m}, nil
	case "key", "offset", "time":
	default:
		return nil, badSearch("unknown mode %q", f.Mode)
	}
	if f.Topic == "" {
		return nil, badSearch("give a topic")
	}
	switch f.Mode {
	case "key":
		if f.Key == "" {
			return nil, badSearch("give a key")
		}
		begin, end, err := timeRange(f)
		if err != nil {
			return nil, err
		}
		return a.MessagesByKey(ctx, f.Topic, f.Key, client.DefaultQueryMax, begin, end)
	case "offset":
		q, err := strconv.ParseInt(f.Queue, 10, 32)
		if err != nil || q < 0 {
			return nil, badSearch("queue id %q: want a number >= 0", f.Queue)
		}
		off, err := strconv.ParseInt(f.Offset, 10, 64)
		if err != nil || off < 0 {
			return nil, badSearch("offset %q: want a number >= 0", f.Offset)
		}
		m, err := a.MessageAtOffset(ctx, f.Topic, f.Broker, int32(q), off)
		if err != nil {
			return nil, err
		}
		return []*message.Ext{m}, nil
	default:
		begin, end, err := timeRange(f)
		if err != nil {
			return nil, err
		}
		n := defaultSearchMax
		if f.Max != "" {
			if n, err = strconv.Atoi(f.Max); err != nil || n <= 0 || n > client.DefaultTimeRangeMax {
				return nil, badSearch("max %q: want 1..%d", f.Max, client.DefaultTimeRangeMax)
			}
		}
		return a.MessagesByTime(ctx, f.Topic, begin, end, n)
	}
}

// timeRange reads the form's begin and end (UTC; empty: unbounded).
func timeRange(f searchForm) (begin, end time.Time, err error) {
	parse := func(name, v string) (time.Time, error) {
		if v == "" {
			return time.Time{}, nil
		}
		for _, layout := range []string{time.RFC3339Nano, dateTimeLocal, "2006-01-02T15:04"} {
			if t, err := time.ParseInLocation(layout, v, time.UTC); err == nil {
				return t, nil
			}
		}
		return time.Time{}, badSearch("%s %q: want YYYY-MM-DDTHH:MM:SS (UTC) or RFC 3339", name, v)
	}
	if begin, err = parse("begin", f.Begin); err != nil {
		return
	}
	end, err = parse("end", f.End)
	return
}
