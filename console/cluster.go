package console

// The cluster page: every broker group, its members' raft view (the
// admin API's ClusterList), the health check, and each node's own
// /status. It reloads its "live" block every RefreshEvery.

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/ops"
	"github.com/ledgermq/ledgermq/protocol"
)

type clusterNode struct {
	client.MemberStatus
	Leader bool
	// Status is the node's /status; StatusErr why there is none.
	Status    *ops.Status
	StatusErr string
	Ready     bool
	NotReady  []string
	// Raft is the node's RAFT_STATUS (format version, replica verifier);
	// nil when it did not answer.
	Raft *protocol.RaftStatus
}

type clusterGroup struct {
	Name, Cluster string
	// Leader is the node that says it leads ("" while none does).
	Leader, LeaderAddr string
	Nodes              []clusterNode
	// Format is the group's raft format version as its leader applied it
	// (0: unknown), MinFormat and MaxFormat what the leader's binary
	// supports.
	Format, MinFormat, MaxFormat uint32
	// Changes are the leader changes the console has seen, newest first.
	Changes []leaderChange
}

type clusterData struct {
	Groups    []clusterGroup
	Health    *client.HealthReport
	HealthErr string
	At        time.Time
}

// clusterView reads everything the page shows.
func (s *Server) clusterView(ctx context.Context) (*clusterData, error) {
	members, err := s.adminOf(ctx).ClusterList(ctx)
	if err != nil {
		return nil, err
	}
	d := &clusterData{At: time.Now()}
	s.leaders.observe(d.At, members)
	nodes := make([]clusterNode, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		nodes[i].MemberStatus, nodes[i].Leader = m, m.Role == "leader"
		if m.Error != "" {
			nodes[i].StatusErr = "does not answer"
			continue
		}
		wg.Add(2)
		go func() {
			defer wg.Done()
			if rs, err := s.adminOf(ctx).RaftStatus(ctx, m.ClientAddr); err == nil {
				nodes[i].Raft = &rs
			}
		}()
		go func() {
			defer wg.Done()
			st, err := s.nodes.status(ctx, m.ClientAddr)
			if err != nil {
				nodes[i].StatusErr = err.Error()
				return
			}
			nodes[i].Status = &st
			nodes[i].Ready, nodes[i].NotReady = st.Ready(ops.DefaultMaxLag)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		h, err := s.adminOf(ctx).Health(ctx, 0)
		if err != nil {
			d.HealthErr = err.Error()
			return
		}
		d.Health = h
	}()
	wg.Wait()
	index := map[string]int{}
	for _, n := range nodes {
		i, ok := index[n.BrokerName]
		if !ok {
			i = len(d.Groups)
			index[n.BrokerName] = i
			d.Groups = append(d.Groups, clusterGroup{Name: n.BrokerName, Cluster: n.Cluster})
		}
		g := &d.Groups[i]
		if n.Leader {
			g.Leader, g.LeaderAddr = n.ID, n.ClientAddr
			if n.Raft != nil {
				g.Format, g.MinFormat, g.MaxFormat = n.Raft.FormatVersion, n.Raft.MinFormatVersion, n.Raft.MaxFormatVersion
			}
		}
		g.Nodes = append(g.Nodes, n)
	}
	for i := range d.Groups {
		d.Groups[i].Changes = s.leaders.history(d.Groups[i].Name)
	}
	return d, nil
}

func (s *Server) cluster(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	p := page{Title: "Cluster", Nav: "cluster", RefreshMS: s.cfg.RefreshEvery.Milliseconds()}
	d, err := s.clusterView(ctx)
	code := http.StatusOK
	if err != nil {
		p.Error = err.Error()
		code = http.StatusBadGateway
	} else {
		p.Data = d
	}
	fragment := r.URL.Query().Get("fragment") == "1"
	if fragment {
		code = http.StatusOK // the page keeps polling; the block shows the error
	}
	s.render(w, code, "cluster", p, fragment)
}
