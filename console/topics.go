package console

// The topics pages: the list (the name servers' topics, one request) and
// one topic's route and queues (min and max offsets, last store time).

import (
	"context"
	"net/http"
	"sort"
	"strings"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
)

// systemPrefixes mark the topics RocketMQ and ledgermq write themselves;
// the list hides them unless asked.
var systemPrefixes = []string{"%RETRY%", "%DLQ%", "rmq_sys_", "RMQ_SYS_", "SCHEDULE_TOPIC_XXXX", "TBW102",
	"SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT", "TRANS_CHECK_MAX_TIME_TOPIC", "RocketMQ_TRACE", "%SYS%"}

func systemTopic(t string) bool {
	if strings.HasSuffix(t, "_REPLY_TOPIC") { // <cluster>_REPLY_TOPIC of request-reply
		return true
	}
	for _, p := range systemPrefixes {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	return false
}

type topicsData struct {
	Topics []string
	Filter string
	System bool
	Hidden int // system topics not shown
	Total  int
}

func (s *Server) topics(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	q := r.URL.Query()
	d := &topicsData{Filter: strings.TrimSpace(q.Get("filter")), System: q.Get("system") == "1"}
	p := page{Title: "Topics", Nav: "topics", Data: d}
	all, err := s.adminOf(ctx).ListTopics(ctx)
	if err != nil {
		p.Error = err.Error()
		s.render(w, http.StatusBadGateway, "topics", p, false)
		return
	}
	d.Total = len(all)
	for _, t := range all {
		if !d.System && systemTopic(t) {
			d.Hidden++
			continue
		}
		if d.Filter != "" && !strings.Contains(strings.ToLower(t), strings.ToLower(d.Filter)) {
			continue
		}
		d.Topics = append(d.Topics, t)
	}
	s.render(w, http.StatusOK, "topics", p, false)
}

type topicData struct {
	Topic       string
	Route       *protocol.TopicRouteData
	Brokers     []routeBroker
	Queues      []client.QueueStatus
	QueuesErr   string
	TotalMsgs   int64
	Readable    int32
	Writable    int32
	OrderConfig string
}

// routeBroker is one broker group of a route with its queue counts.
type routeBroker struct {
	Name, Cluster string
	Addrs         []routeAddr
	ReadQueues    int32
	WriteQueues   int32
	Perm          string
	// PutMinute and PutHour are the messages stored per second over the
	// last minute and hour by the group's leader; HasRate whether it
	// answered them.
	PutMinute, PutHour float64
	HasRate            bool
}

type routeAddr struct {
	ID   int64
	Addr string
}

func permText(p int32) string {
	var b strings.Builder
	if p&protocol.PermRead != 0 {
		b.WriteString("R")
	}
	if p&protocol.PermWrite != 0 {
		b.WriteString("W")
	}
	if b.Len() == 0 {
		return "-"
	}
	return b.String()
}

func (s *Server) topic(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	name := r.PathValue("topic")
	d := &topicData{Topic: name}
	p := page{Title: "Topic " + name, Nav: "topics", Data: d}
	rd, err := s.adminOf(ctx).TopicRoute(ctx, name)
	if err != nil {
		p.Error = err.Error()
		s.render(w, http.StatusNotFound, "topic", p, false)
		return
	}
	d.Route, d.OrderConfig = rd, rd.OrderTopicConf
	queues := map[string]protocol.QueueData{}
	for _, qd := range rd.QueueDatas {
		queues[qd.BrokerName] = qd
		d.Readable += qd.ReadQueueNums
		d.Writable += qd.WriteQueueNums
	}
	for _, bd := range rd.BrokerDatas {
		rb := routeBroker{Name: bd.BrokerName, Cluster: bd.Cluster}
		for id, addr := range bd.BrokerAddrs {
			rb.Addrs = append(rb.Addrs, routeAddr{ID: id, Addr: addr})
		}
		sort.Slice(rb.Addrs, func(i, j int) bool { return rb.Addrs[i].ID < rb.Addrs[j].ID })
		qd := queues[bd.BrokerName]
		rb.ReadQueues, rb.WriteQueues, rb.Perm = qd.ReadQueueNums, qd.WriteQueueNums, permText(qd.Perm)
		// The put rate: the group leader's TOPIC_PUT_NUMS (counted since
		// that node started; none yet when it has stored none).
		if leader, ok := bd.BrokerAddrs[0]; ok {
			if st, err := s.adminOf(ctx).BrokerStats(ctx, leader, "TOPIC_PUT_NUMS", name); err == nil {
				rb.PutMinute, rb.PutHour, rb.HasRate = st.StatsMinute.Tps, st.StatsHour.Tps, true
			}
		}
		d.Brokers = append(d.Brokers, rb)
	}
	sort.Slice(d.Brokers, func(i, j int) bool { return d.Brokers[i].Name < d.Brokers[j].Name })
	qs, err := s.adminOf(ctx).TopicStatus(ctx, name)
	if err != nil {
		d.QueuesErr = err.Error()
	}
	d.Queues = qs
	for _, q := range qs {
		d.TotalMsgs += q.MaxOffset - q.MinOffset
	}
	s.render(w, http.StatusOK, "topic", p, false)
}
