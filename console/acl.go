package console

// The ACL page, read-only. Per node: whether the ACL is on
// (GET_BROKER_CONFIG's acl_enable) and which rules the node enforces
// (GET_BROKER_RUNTIME_INFO's aclHash, aclIndex, aclFrom and aclFileHash),
// so an operator sees whether every node of a group enforces the same
// rules. Per group with the ACL on: its accounts and white list, as its
// plain_acl.yml (replicated through raft) writes them, read from a node
// that has it on (GET_BROKER_CLUSTER_ACL_CONFIG, which needs the
// console's account to be an admin one); secret keys are never shown,
// only their length.

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
	// Accounts and White are the group's rules as written, read from
	// the node AccountsFrom; AccountsErr why they could not be.
	Accounts     []aclAccount
	White        []string
	AccountsFrom string
	AccountsErr  string
	// Agree: every answering node with the ACL on enforces the same rules.
	Agree   bool
	Enabled int // nodes with the ACL on
}

// aclAccount is one account as the page shows it: the secret key only by
// its length.
type aclAccount struct {
	AccessKey, White, DefaultTopic, DefaultGroup string
	SecretLen                                    int
	Admin                                        bool
	Topics, Groups                               []string
}

type aclData struct {
	Groups []aclGroup
	At     time.Time
}

func (s *Server) aclNode(ctx context.Context, n *aclNode) {
	cfg, err := s.adminOf(ctx).BrokerConfig(ctx, n.Addr)
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
	rt, err := s.adminOf(ctx).BrokerRuntime(ctx, n.Addr)
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
	members, err := s.adminOf(ctx).ClusterList(ctx)
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
	for i := range d.Groups {
		s.aclAccounts(ctx, &d.Groups[i])
	}
	s.render(w, http.StatusOK, "acl", p, false)
}

// aclAccounts reads g's accounts from its first node with the ACL on.
func (s *Server) aclAccounts(ctx context.Context, g *aclGroup) {
	for _, n := range g.Nodes {
		if !n.Enabled || n.Err != "" {
			continue
		}
		g.AccountsFrom = n.ID
		c, err := s.adminOf(ctx).ClusterACLConfig(ctx, n.Addr)
		if err != nil {
			g.AccountsErr = err.Error()
			return
		}
		g.White = c.GlobalWhiteAddrs
		for _, a := range c.PlainAccessConfigs {
			g.Accounts = append(g.Accounts, aclAccount{AccessKey: a.AccessKey, SecretLen: len(a.SecretKey), Admin: a.Admin,
				White: a.WhiteRemoteAddress, DefaultTopic: a.DefaultTopicPerm, DefaultGroup: a.DefaultGroupPerm,
				Topics: a.TopicPerms, Groups: a.GroupPerms})
		}
		return
	}
}
