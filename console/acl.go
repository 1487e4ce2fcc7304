package console

// The ACL page, read-only. ledgermq serves no request that lists the ACL's
// accounts (RocketMQ's GET_BROKER_CLUSTER_ACL_CONFIG and the ACL 2.0
// user listings are not served: protocol/codes.go): the accounts live in
// each group's plain_acl.yml, replicated through raft. What the wire
// does carry is shown per node: whether the ACL is on (GET_BROKER_CONFIG's
// acl_enable) and which rules the node enforces (GET_BROKER_RUNTIME_INFO's
// aclHash, aclIndex, aclFrom and aclFileHash), so an operator sees
// whether every node of a group enforces the same rules.

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"time"
)

type aclNode struct {
	Group, ID, Addr string
	// Enabled is the node's acl_enable; Known whether its config said.
	Enabled, Known bool
	// Hash, Index, From: the rules in force (their hash, the raft index
	// that put them in force, the node whose file they came from);
	// FileHash the node's own file's hash.
	Hash, Index, From, FileHash string
	Err                         string
}

type aclGroup struct {
	Name  string
	Nodes []aclNode
	// Agree: every answering node with the ACL on enforces the same rules.
	Agree   bool
	Enabled int // nodes with the ACL on
}

type aclData struct {
	Groups []aclGroup
	At     time.Time
}

func (s *Server) aclNode(ctx context.Context, n *aclNode) {
	cfg, err := s.cfg.Admin.BrokerConfig(ctx, n.Addr)
	if err != nil {
		n.Err = err.Error()
		return
	}
	for _, k := range []string{"acl_enable", "aclEnable"} {
		if v, ok := cfg[k]; ok {
			n.Known = true
			n.Enabled, _ = strconv.ParseBool(v)
			break
		}
	}
	if !n.Enabled {
		return
	}
	rt, err := s.cfg.Admin.BrokerRuntime(ctx, n.Addr)
	if err != nil {
		n.Err = err.Error()
		return
	}
	n.Hash, n.Index, n.From, n.FileHash = rt["aclHash"], rt["aclIndex"], rt["aclFrom"], rt["aclFileHash"]
}

func (s *Server) acl(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	d := &aclData{At: time.Now()}
	p := page{Title: "ACL", Nav: "acl", Data: d}
	members, err := s.cfg.Admin.ClusterList(ctx)
	if err != nil {
		p.Error = err.Error()
		s.render(w, http.StatusBadGateway, "acl", p, false)
		return
	}
	nodes := make([]aclNode, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		nodes[i] = aclNode{Group: m.BrokerName, ID: m.ID, Addr: m.ClientAddr}
		if m.Error != "" {
			nodes[i].Err = "does not answer"
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.aclNode(ctx, &nodes[i])
		}()
	}
	wg.Wait()
	index := map[string]int{}
	for _, n := range nodes {
		i, ok := index[n.Group]
		if !ok {
			i = len(d.Groups)
			index[n.Group] = i
			d.Groups = append(d.Groups, aclGroup{Name: n.Group, Agree: true})
		}
		g := &d.Groups[i]
		g.Nodes = append(g.Nodes, n)
		if n.Enabled {
			g.Enabled++
		}
	}
	for i := range d.Groups {
		g := &d.Groups[i]
		hash := ""
		for _, n := range g.Nodes {
			if !n.Enabled || n.Err != "" {
				continue
			}
			if hash == "" {
				hash = n.Hash
			} else if n.Hash != hash {
				g.Agree = false
			}
		}
	}
	s.render(w, http.StatusOK, "acl", p, false)
}
