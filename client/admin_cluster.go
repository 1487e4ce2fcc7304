package client

// The cluster's members and their raft state: the cluster list (106 plus
// RAFT_STATUS 4001 of every node), broker runtime tables (28), health,
// and the raft verbs (4001–4004) that `ledgermq admin raft` runs.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// DefaultCatchUpSlack is how many raft entries behind the leader's commit
// index a non-voter may be when AddNode promotes it, and the lag Health
// tolerates by default.
const DefaultCatchUpSlack = 16

// RaftStatus asks the node at addr for its raft view (RAFT_STATUS, 4001).
func (a *Admin) RaftStatus(ctx context.Context, addr string) (protocol.RaftStatus, error) {
	resp, err := a.call(ctx, addr, protocol.RaftStatusRequest(), 0)
	if err != nil {
		return protocol.RaftStatus{}, err
	}
	st, err := protocol.DecodeRaftStatus(resp.Body)
	if err != nil {
		return protocol.RaftStatus{}, fmt.Errorf("client: raft status from %s: %w", addr, err)
	}
	return st, nil
}

// leaderOf finds bd's leader: the name servers' brokerId 0, or (while they
// have not learned a new leader yet) the leader any listed member names.
func (a *Admin) leaderOf(ctx context.Context, bd protocol.BrokerData) (protocol.RaftStatus, error) {
	ids := make([]int64, 0, len(bd.BrokerAddrs))
	for id := range bd.BrokerAddrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var errs []error
	for _, id := range ids {
		st, err := a.RaftStatus(ctx, bd.BrokerAddrs[id])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Role == "leader" {
			return st, nil
		}
		if st.LeaderAddr != "" {
			if ls, err := a.RaftStatus(ctx, st.LeaderAddr); err == nil && ls.Role == "leader" {
				return ls, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s (%s) knows no leader", st.Node, bd.BrokerAddrs[id]))
	}
	return protocol.RaftStatus{}, fmt.Errorf("%w: group %s: %w", ErrLeaderNotFound, bd.BrokerName, errors.Join(errs...))
}

// GroupLeader resolves a broker group (group "" means the only one) and
// returns its name and its leader's own raft view.
func (a *Admin) GroupLeader(ctx context.Context, group string) (string, protocol.RaftStatus, error) {
	info, err := a.ClusterInfo(ctx)
	if err != nil {
		return "", protocol.RaftStatus{}, err
	}
	names := groupNames(info)
	if group == "" {
		if len(names) != 1 {
			return "", protocol.RaftStatus{}, fmt.Errorf("%w: the name servers know %d broker groups (%s): name one",
				ErrNoSuchBroker, len(names), strings.Join(names, ", "))
		}
		group = names[0]
	}
	bd, ok := info.BrokerAddrTable[group]
	if !ok {
		return "", protocol.RaftStatus{}, fmt.Errorf("%w: the name servers know no broker group %q (they know %s)",
			ErrNoSuchBroker, group, strings.Join(names, ", "))
	}
	ls, err := a.leaderOf(ctx, bd)
	return group, ls, err
}

// MemberStatus is one member of a broker group as RaftMembers and
// ClusterList report it: its own view, and its lag behind the leader's
// commit index. Error is set (and the view empty) when it did not answer.
type MemberStatus struct {
	Cluster      string `json:"cluster,omitempty"`
	BrokerName   string `json:"brokerName"`
	ID           string `json:"id"`
	Voter        bool   `json:"voter"`
	Role         string `json:"role"`
	Term         uint64 `json:"term"`
	LastIndex    uint64 `json:"lastIndex"`
	CommitIndex  uint64 `json:"commitIndex"`
	AppliedIndex uint64 `json:"appliedIndex"`
	Lag          uint64 `json:"lag"`
	ClientAddr   string `json:"clientAddr"`
	RaftAddr     string `json:"raftAddr"`
	// BrokerID is the id the name servers list the node under (0 = the
	// leader), -1 when they do not list it.
	BrokerID int64  `json:"brokerId"`
	Error    string `json:"error,omitempty"`
}

// RaftMembers returns every member of the leader's configuration with
// its own view, asked of each.
func (a *Admin) RaftMembers(ctx context.Context, ls protocol.RaftStatus) []MemberStatus {
	var out []MemberStatus
	for _, m := range ls.Members {
		r := MemberStatus{BrokerName: ls.Group, ID: m.ID, Voter: m.Voter, ClientAddr: m.ClientAddr, RaftAddr: m.RaftAddr, BrokerID: -1}
		st := ls
		if m.ID != ls.Node {
			var err error
			if st, err = a.RaftStatus(ctx, m.ClientAddr); err != nil {
				r.Role, r.Error = "unreachable", err.Error()
				out = append(out, r)
				continue
			}
		}
		r.Role, r.Term, r.LastIndex, r.CommitIndex, r.AppliedIndex = st.Role, st.Term, st.LastIndex, st.CommitIndex, st.AppliedIndex
		if ls.CommitIndex > st.AppliedIndex {
			r.Lag = ls.CommitIndex - st.AppliedIndex
		}
		out = append(out, r)
	}
	return out
}

// ClusterList returns one line per node of every broker group: what the
// name servers list (cluster, brokerId) joined with each member's raft
// view. Every member of the group's configuration is listed by its node id,
// a dead one too ("unreachable", with the error): from the leader's
// configuration, or, while the group has no reachable leader, from the
// configuration its members report (membersWithoutLeader).
func (a *Admin) ClusterList(ctx context.Context) ([]MemberStatus, error) {
	info, err := a.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	clusterOf := map[string]string{}
	for c, names := range info.ClusterAddrTable {
		for _, n := range names {
			clusterOf[n] = c
		}
	}
	var out []MemberStatus
	for _, name := range groupNames(info) {
		bd := info.BrokerAddrTable[name]
		idOf := map[string]int64{}
		for id, addr := range bd.BrokerAddrs {
			idOf[addr] = id
		}
		var rows []MemberStatus
		if ls, err := a.leaderOf(ctx, bd); err == nil {
			rows = a.RaftMembers(ctx, ls)
		} else {
			rows = a.membersWithoutLeader(ctx, name, idOf)
		}
		for i := range rows {
			rows[i].Cluster, rows[i].BrokerName = clusterOf[name], name
			rows[i].BrokerID = -1
			if id, ok := idOf[rows[i].ClientAddr]; ok {
				rows[i].BrokerID = id
			}
		}
		sort.Slice(rows, func(i, j int) bool {
			return rows[i].ID < rows[j].ID || rows[i].ID == rows[j].ID && rows[i].ClientAddr < rows[j].ClientAddr
		})
		out = append(out, rows...)
	}
	return out, nil
}

// membersWithoutLeader lists a group that has no reachable leader (an
// election under way, or a lost majority): every member of the
// configuration the members that answer report (the highest term's),
// each with its own view or, when it does not answer, its id and error,
// so that a node that died is listed by name, not dropped or shown
// without one; and every address the name servers list beyond those.
// Lag is counted from the highest commit index among the answers. Only a
// listed address that neither answers nor belongs to a configuration
// some member reported has no id.
func (a *Admin) membersWithoutLeader(ctx context.Context, group string, listed map[string]int64) []MemberStatus {
	addrs := make([]string, 0, len(listed))
	for addr := range listed {
		addrs = append(addrs, addr)
	}
	sort.Strings(addrs)
	type answer struct {
		st  protocol.RaftStatus
		err error
	}
	asked := map[string]answer{}
	ask := func(addr string) answer {
		if an, ok := asked[addr]; ok {
			return an
		}
		st, err := a.RaftStatus(ctx, addr)
		asked[addr] = answer{st, err}
		return asked[addr]
	}
	var conf []protocol.RaftMember
	var confTerm, commit uint64
	for _, addr := range addrs {
		an := ask(addr)
		if an.err != nil {
			continue
		}
		commit = max(commit, an.st.CommitIndex)
		if len(an.st.Members) > 0 && (conf == nil || an.st.Term > confTerm) {
			conf, confTerm = an.st.Members, an.st.Term
		}
	}
	row := func(r MemberStatus, an answer) MemberStatus {
		if an.err != nil {
			r.Role, r.Error = "unreachable", an.err.Error()
			return r
		}
		st := an.st
		r.ID, r.Role, r.Term, r.LastIndex, r.CommitIndex, r.AppliedIndex = st.Node, st.Role, st.Term, st.LastIndex, st.CommitIndex, st.AppliedIndex
		if m, ok := st.Member(st.Node); ok {
			r.Voter, r.RaftAddr = m.Voter, m.RaftAddr
		}
		if commit > st.AppliedIndex {
			r.Lag = commit - st.AppliedIndex
		}
		return r
	}
	var rows []MemberStatus
	inConf := map[string]bool{}
	for _, m := range conf {
		inConf[m.ClientAddr] = true
		r := row(MemberStatus{BrokerName: group, ID: m.ID, Voter: m.Voter, ClientAddr: m.ClientAddr, RaftAddr: m.RaftAddr}, ask(m.ClientAddr))
		rows = append(rows, r)
	}
	for _, addr := range addrs {
		if !inConf[addr] {
			rows = append(rows, row(MemberStatus{BrokerName: group, ClientAddr: addr}, ask(addr)))
		}
	}
	return rows
}

// BrokerRuntime returns a node's runtime key/value table
// (GET_BROKER_RUNTIME_INFO, 28: commit log offsets, put TPS, pool queues…).
func (a *Admin) BrokerRuntime(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := a.call(ctx, addr, protocol.BrokerRuntimeInfoRequest(), 0)
	if err != nil {
		return nil, err
	}
	kv, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: runtime info from %s: %w", addr, err)
	}
	return kv.Table, nil
}

// BrokerConfig returns a node's effective settings by key
// (GET_BROKER_CONFIG, 26; secrets are shown as "(set)").
func (a *Admin) BrokerConfig(ctx context.Context, addr string) (map[string]string, error) {
	resp, err := a.call(ctx, addr, protocol.BrokerConfigRequest(), 0)
	if err != nil {
		return nil, err
	}
	return protocol.DecodeBrokerConfig(resp.Body), nil
}

// ClusterACLConfig returns the access-control rules a node enforces
// (GET_BROKER_CLUSTER_ACL_CONFIG, 54): its group's plain_acl.yml as
// written, secret keys included. The call needs an admin account; a node
// with ACL off refuses it.
func (a *Admin) ClusterACLConfig(ctx context.Context, addr string) (protocol.ClusterACLConfig, error) {
	resp, err := a.call(ctx, addr, remoting.NewRequest(remoting.GetBrokerClusterACLConfig, nil, nil), 0)
	if err != nil {
		return protocol.ClusterACLConfig{}, err
	}
	c, err := protocol.DecodeClusterACLConfig(resp.Body)
	if err != nil {
		return c, fmt.Errorf("client: acl config from %s: %w", addr, err)
	}
	return c, nil
}

// BrokerStats returns a node's statistic name for key (VIEW_BROKER_STATS_DATA,
// 315): its last minute, hour and day, as RocketMQ's BrokerStatsManager
// keeps them (TOPIC_PUT_NUMS by topic, GROUP_GET_NUMS by topic@group, …).
// A statistic the node has not counted yet is an error from the node.
func (a *Admin) BrokerStats(ctx context.Context, addr, name, key string) (protocol.BrokerStatsData, error) {
	h := protocol.ViewBrokerStatsDataRequestHeader{StatsName: name, StatsKey: key}
	resp, err := a.call(ctx, addr, h.Request(), 0)
	if err != nil {
		return protocol.BrokerStatsData{}, err
	}
	d, err := protocol.DecodeBrokerStatsData(resp.Body)
	if err != nil {
		return d, fmt.Errorf("client: stats from %s: %w", addr, err)
	}
	return d, nil
}

// HealthReport is the outcome of Health: Healthy, or the problems found.
type HealthReport struct {
	Healthy  bool           `json:"healthy"`
	Problems []string       `json:"problems"`
	Members  []MemberStatus `json:"members"`
}

// Health checks that every broker group has a leader, every member of
// its configuration answers RAFT_STATUS, votes and lags the leader's
// commit index by at most maxLag entries (DefaultCatchUpSlack when 0),
// and every name server lists the leader as brokerId 0. Only an error
// reaching every name server is an error; the rest are problems.
func (a *Admin) Health(ctx context.Context, maxLag uint64) (*HealthReport, error) {
	if maxLag == 0 {
		maxLag = DefaultCatchUpSlack
	}
	rep := &HealthReport{Problems: []string{}}
	infos := map[string]*protocol.ClusterInfo{}
	var nsErrs []error
	for _, ns := range a.opts.nameServers {
		resp, err := a.call(ctx, ns, protocol.ClusterInfoRequest(), 0)
		if err == nil {
			var info *protocol.ClusterInfo
			if info, err = protocol.DecodeClusterInfo(resp.Body); err == nil {
				infos[ns] = info
				continue
			}
		}
		nsErrs = append(nsErrs, err)
		rep.Problems = append(rep.Problems, fmt.Sprintf("name server %s: %v", ns, err))
	}
	if len(infos) == 0 {
		return nil, fmt.Errorf("client: no name server answered: %w", errors.Join(nsErrs...))
	}
	groups := map[string]protocol.BrokerData{}
	for _, info := range infos {
		for name, bd := range info.BrokerAddrTable {
			if cur, ok := groups[name]; ok {
				for id, addr := range bd.BrokerAddrs {
					cur.BrokerAddrs[id] = addr
				}
				continue
			}
			cp := bd
			cp.BrokerAddrs = map[int64]string{}
			for id, addr := range bd.BrokerAddrs {
				cp.BrokerAddrs[id] = addr
			}
			groups[name] = cp
		}
	}
	if len(groups) == 0 {
		rep.Problems = append(rep.Problems, "the name servers list no broker group")
	}
	names := make([]string, 0, len(groups))
	for n := range groups {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		ls, err := a.leaderOf(ctx, groups[name])
		if err != nil {
			rep.Problems = append(rep.Problems, fmt.Sprintf("group %s has no leader: %v", name, err))
			continue
		}
		for _, m := range a.RaftMembers(ctx, ls) {
			rep.Members = append(rep.Members, m)
			switch {
			case m.Error != "":
				rep.Problems = append(rep.Problems, fmt.Sprintf("group %s: %s (%s) does not answer: %s", name, m.ID, m.ClientAddr, m.Error))
			case !m.Voter:
				rep.Problems = append(rep.Problems, fmt.Sprintf("group %s: %s is not a voter", name, m.ID))
			case m.Lag > maxLag:
				rep.Problems = append(rep.Problems, fmt.Sprintf("group %s: %s lags %d entries behind the leader (bound %d)", name, m.ID, m.Lag, maxLag))
			}
		}
		for _, ns := range sortedKeys(infos) {
			bd, ok := infos[ns].BrokerAddrTable[name]
			if addr, has := bd.LeaderAddr(); !ok || !has || addr != ls.LeaderAddr {
				rep.Problems = append(rep.Problems, fmt.Sprintf("name server %s does not list %s's leader %s (%s) as brokerId 0 (it lists %v)",
					ns, name, ls.Node, ls.LeaderAddr, bd.BrokerAddrs))
			}
		}
	}
	rep.Healthy = len(rep.Problems) == 0
	return rep, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TransferLeader hands the group's leadership to the member to ("" = the
// most caught-up follower; RAFT_TRANSFER_LEADER, 4004) and returns the
// old leader's view and the new one's.
func (a *Admin) TransferLeader(ctx context.Context, group, to string) (from, now protocol.RaftStatus, err error) {
	g, ls, err := a.GroupLeader(ctx, group)
	if err != nil {
		return ls, ls, err
	}
	if _, err := a.call(ctx, ls.LeaderAddr, protocol.RaftNodeHeader{Node: to}.Request(remoting.RaftTransferLeader), membershipTimeout); err != nil {
		return ls, ls, err
	}
	// The old leader has handed over; the new one takes a moment to win
	// its election and be known to every member: wait for it rather than
	// report "no leader" in between.
	wctx, cancel := context.WithTimeout(ctx, membershipTimeout)
	defer cancel()
	if err := a.waitLeaderOtherThan(wctx, g, ls.Node, 50*time.Millisecond); err != nil {
		return ls, ls, fmt.Errorf("client: after the transfer from %s: %w", ls.Node, err)
	}
	_, now, err = a.GroupLeader(ctx, g)
	return ls, now, err
}

// RemoveNode removes a member from the group's configuration
// (RAFT_REMOVE_NODE, 4002, on the leader). The leader refuses to remove
// itself.
func (a *Admin) RemoveNode(ctx context.Context, group, node string) error {
	_, ls, err := a.GroupLeader(ctx, group)
	if err != nil {
		return err
	}
	_, err = a.call(ctx, ls.LeaderAddr, protocol.RaftNodeHeader{Node: node}.Request(remoting.RaftRemoveNode), membershipTimeout)
	return err
}

// AddNodeOptions tune AddNode.
type AddNodeOptions struct {
	// Slack is how far behind the leader's commit index the node may be
	// when promoted (DefaultCatchUpSlack when 0).
	Slack uint64
	// Progress, when set, hears each step for people.
	Progress func(format string, args ...any)
	// Poll is how often catch-up is checked (100 ms when 0).
	Poll time.Duration
}

// AddNode adds m to the group as a non-voter (unless it is one already;
// RAFT_ADD_NODE, 4003), waits until its applied index is within the slack
// of the leader's commit index, and promotes it to voter. It returns the
// node's last view. A node that does not catch up before ctx ends stays a
// non-voter; calling AddNode again resumes.
func (a *Admin) AddNode(ctx context.Context, group string, m protocol.RaftMember, o AddNodeOptions) (protocol.RaftStatus, error) {
	if o.Slack == 0 {
		o.Slack = DefaultCatchUpSlack
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	progress := o.Progress
	if progress == nil {
		progress = func(string, ...any) {}
	}
	group, ls, err := a.GroupLeader(ctx, group)
	if err != nil {
		return protocol.RaftStatus{}, err
	}
	if cur, ok := ls.Member(m.ID); !ok || cur.Voter {
		if ok && cur.Voter {
			return protocol.RaftStatus{}, fmt.Errorf("%w: %s is a voter of %s already", ErrConfig, m.ID, group)
		}
		req := protocol.RaftNodeHeader{Node: m.ID, RaftAddr: m.RaftAddr, Voter: false}.Request(remoting.RaftAddNode)
		if _, err := a.call(ctx, ls.LeaderAddr, req, membershipTimeout); err != nil {
			return protocol.RaftStatus{}, fmt.Errorf("client: add %s as a non-voter: %w", m.ID, err)
		}
		progress("  %s added as a non-voter; waiting for it to catch up\n", m.ID)
	}
	var st protocol.RaftStatus
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	var last time.Time
	for {
		var leader protocol.RaftStatus
		if leader, err = a.RaftStatus(ctx, ls.LeaderAddr); err == nil {
			if st, err = a.RaftStatus(ctx, m.ClientAddr); err == nil && st.AppliedIndex+o.Slack >= leader.CommitIndex {
				progress("  %s caught up: applied %d, leader's commit %d\n", m.ID, st.AppliedIndex, leader.CommitIndex)
				break
			}
			if err == nil && time.Since(last) >= 2*time.Second {
				progress("  %s applied %d of %d\n", m.ID, st.AppliedIndex, leader.CommitIndex)
				last = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			return st, fmt.Errorf("client: %s did not catch up in time (last error: %v); it stays a non-voter: "+
				"add it again to promote it once it has: %w", m.ID, err, ctx.Err())
		case <-tick.C:
		}
	}
	req := protocol.RaftNodeHeader{Node: m.ID, RaftAddr: m.RaftAddr, Voter: true}.Request(remoting.RaftAddNode)
	if _, err := a.call(ctx, ls.LeaderAddr, req, membershipTimeout); err != nil {
		return st, fmt.Errorf("client: promote %s: %w", m.ID, err)
	}
	return st, nil
}
