package console

// The pending page: per broker group, the timer messages parked until
// their due time (PendingTimers, request 4011), the transactions whose
// half messages wait for END_TRANSACTION (PendingTransactions, 4012) and
// the POP messages handed out and not acknowledged, per consumer group
// and topic: in flight, due again, the oldest invisible-until (PopState,
// 4014, as `ledgermq admin pending pop`), all asked of the group's leader.

import (
	"context"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
)

// defaultPendingShown is how many items of each list a group shows unless
// the page is asked for more (?limit=, at most protocol.MaxPendingList).
const defaultPendingShown = 50

type pendingGroup struct {
	Name                  string
	Timers                protocol.PendingTimers
	TimersErr             string
	Transactions          protocol.PendingTransactions
	TransactionsErr       string
	Pop                   protocol.PopState
	PopErr                string
	TimersMore, TransMore int64 // how many the lists leave out
	PopMore               int64
}

type pendingData struct {
	Groups []pendingGroup
	Limit  int
	At     time.Time
}

// groupNames returns the broker groups ClusterList names, sorted.
func (s *Server) groupNames(ctx context.Context) ([]string, error) {
	members, err := s.adminOf(ctx).ClusterList(ctx)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, m := range members {
		if !seen[m.BrokerName] {
			seen[m.BrokerName] = true
			out = append(out, m.BrokerName)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (s *Server) pending(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	d := &pendingData{Limit: defaultPendingShown, At: time.Now()}
	p := page{Title: "Pending timers, transactions and POP messages", Nav: "pending", Data: d}
	if v := strings.TrimSpace(r.URL.Query().Get("limit")); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > protocol.MaxPendingList {
			p.Error = "limit " + strconv.Quote(v) + ": want 1.." + strconv.Itoa(protocol.MaxPendingList)
			s.render(w, http.StatusBadRequest, "pending", p, false)
			return
		}
		d.Limit = n
	}
	names, err := s.groupNames(ctx)
	if err != nil {
		p.Error = err.Error()
		s.render(w, http.StatusBadGateway, "pending", p, false)
		return
	}
	d.Groups = make([]pendingGroup, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		g := &d.Groups[i]
		g.Name = name
		wg.Add(3)
		go func() {
			defer wg.Done()
			t, err := s.adminOf(ctx).PendingTimers(ctx, name, d.Limit)
			if err != nil {
				g.TimersErr = err.Error()
				return
			}
			g.Timers, g.TimersMore = t, max(0, t.Count-int64(len(t.Timers)))
		}()
		go func() {
			defer wg.Done()
			t, err := s.adminOf(ctx).PendingTransactions(ctx, name, d.Limit)
			if err != nil {
				g.TransactionsErr = err.Error()
				return
			}
			g.Transactions, g.TransMore = t, max(0, t.Count-int64(len(t.Transactions)))
		}()
		go func() {
			defer wg.Done()
			st, err := s.adminOf(ctx).PopState(ctx, name, protocol.PopStateHeader{Limit: d.Limit})
			if err != nil {
				g.PopErr = err.Error()
				return
			}
			g.Pop, g.PopMore = st, max(0, st.Count-int64(len(st.Rows)))
		}()
	}
	wg.Wait()
	s.render(w, http.StatusOK, "pending", p, false)
}
