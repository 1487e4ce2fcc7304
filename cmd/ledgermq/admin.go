package main

// `ledgermq admin …`: operator commands against a running cluster, found
// through its name servers (-n, as RocketMQ's mqadmin). Each verb asks the
// name servers for the broker groups and their members (brokerId 0 is a
// group's raft leader), then talks to the brokers over the RocketMQ
// remoting protocol; ledgermq's raft requests (4001–4004, remoting/codes.go)
// cover what RocketMQ has no request for. Output is an aligned table for
// people, or JSON with --output json. Every verb is bounded by --timeout.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
	"github.com/ledgermq/ledgermq/routing"
)

// errAdmin is every admin verb's failure that is not the cluster's answer.
var errAdmin = errors.New("admin")

// adminFlags are the flags every admin verb shares.
type adminFlags struct {
	namesrv string
	output  string
	timeout time.Duration
}

func newAdminCmd() *cobra.Command {
	af := &adminFlags{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Operate a running cluster: raft groups and their members",
		Long: "admin talks to a running cluster through its name servers (-n host:port;host:port, or\n" +
			"the NAMESRV_ADDR environment variable, as RocketMQ's mqadmin).",
	}
	pf := cmd.PersistentFlags()
	pf.StringVarP(&af.namesrv, "namesrv", "n", os.Getenv("NAMESRV_ADDR"), "name server addresses, ';'-separated")
	pf.StringVarP(&af.output, "output", "o", "table", "output format: table or json")
	pf.DurationVar(&af.timeout, "timeout", 60*time.Second, "bound on the whole command")
	cmd.AddCommand(newAdminRaftCmd(af))
	return cmd
}

// admin is one run of an admin verb.
type admin struct {
	rc      *remoting.Client
	namesrv []string
	json    bool
	out     io.Writer
}

// open checks the shared flags and connects lazily (remoting dials on
// first use). The caller closes the returned admin.
func (af *adminFlags) open(cmd *cobra.Command) (*admin, context.Context, context.CancelFunc, error) {
	if af.output != "table" && af.output != "json" {
		return nil, nil, nil, fmt.Errorf("%w: --output %q: want table or json", errAdmin, af.output)
	}
	var ns []string
	for _, a := range strings.Split(af.namesrv, ";") {
		if a = strings.TrimSpace(a); a != "" {
			ns = append(ns, a)
		}
	}
	if len(ns) == 0 {
		return nil, nil, nil, fmt.Errorf("%w: no name server: give -n host:port or set NAMESRV_ADDR", errAdmin)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), af.timeout)
	a := &admin{rc: remoting.NewClient(remoting.ClientConfig{}), namesrv: ns, json: af.output == "json", out: cmd.OutOrStdout()}
	return a, ctx, cancel, nil
}

func (a *admin) Close() error { return a.rc.Close() }

// call sends req to addr and returns the response if its code is Success,
// each request bounded by a few seconds inside ctx.
func (a *admin) call(ctx context.Context, addr string, req *remoting.Command, per time.Duration) (*remoting.Command, error) {
	cctx, cancel := context.WithTimeout(ctx, per)
	defer cancel()
	resp, err := a.rc.Invoke(cctx, addr, req)
	if err != nil {
		return nil, err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return nil, fmt.Errorf("%s at %s: %w", remoting.RequestCodeName(req.Code), addr, err)
	}
	return resp, nil
}

// clusterInfo asks the name servers in turn for the broker groups.
func (a *admin) clusterInfo(ctx context.Context) (routing.ClusterInfo, error) {
	var errs []error
	for _, ns := range a.namesrv {
		resp, err := a.call(ctx, ns, remoting.NewRequest(remoting.GetBrokerClusterInfo, nil, nil), 3*time.Second)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var info routing.ClusterInfo
		if err := json.Unmarshal(resp.Body, &info); err != nil {
			errs = append(errs, fmt.Errorf("cluster info from %s: %w", ns, err))
			continue
		}
		return info, nil
	}
	return routing.ClusterInfo{}, fmt.Errorf("%w: no name server answered: %w", errAdmin, errors.Join(errs...))
}

// groupNames lists the broker groups the name servers know, sorted.
func groupNames(info routing.ClusterInfo) []string {
	names := make([]string, 0, len(info.BrokerAddrTable))
	for n := range info.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// raftStatus asks the node at addr for its raft view.
func (a *admin) raftStatus(ctx context.Context, addr string) (protocol.RaftStatus, error) {
	resp, err := a.call(ctx, addr, remoting.NewRequest(remoting.RaftStatus, nil, nil), 3*time.Second)
	if err != nil {
		return protocol.RaftStatus{}, err
	}
	return protocol.DecodeRaftStatus(resp.Body)
}

// leaderStatus finds group's leader: the name servers' brokerId 0, or
// (while they have not learned a new leader yet) the leader any listed
// member names. It returns the leader's own view.
func (a *admin) leaderStatus(ctx context.Context, info routing.ClusterInfo, group string) (protocol.RaftStatus, error) {
	bd, ok := info.BrokerAddrTable[group]
	if !ok {
		return protocol.RaftStatus{}, fmt.Errorf("%w: the name servers know no broker group %q (they know %s)", errAdmin, group, strings.Join(groupNames(info), ", "))
	}
	ids := make([]int64, 0, len(bd.BrokerAddrs))
	for id := range bd.BrokerAddrs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	var errs []error
	for _, id := range ids {
		st, err := a.raftStatus(ctx, bd.BrokerAddrs[id])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Role == "leader" {
			return st, nil
		}
		if st.LeaderAddr != "" {
			if ls, err := a.raftStatus(ctx, st.LeaderAddr); err == nil && ls.Role == "leader" {
				return ls, nil
			}
		}
		errs = append(errs, fmt.Errorf("%s (%s) knows no leader", st.Node, bd.BrokerAddrs[id]))
	}
	return protocol.RaftStatus{}, fmt.Errorf("%w: group %s has no reachable leader: %w", errAdmin, group, errors.Join(errs...))
}

// pickGroup returns --group, or the only group there is.
func pickGroup(info routing.ClusterInfo, group string) (string, error) {
	if group != "" {
		return group, nil
	}
	names := groupNames(info)
	if len(names) == 1 {
		return names[0], nil
	}
	return "", fmt.Errorf("%w: the name servers know %d broker groups (%s): name one with --group", errAdmin, len(names), strings.Join(names, ", "))
}

// printTable writes rows under header as an aligned table without borders.
func printTable(w io.Writer, header table.Row, rows []table.Row) {
	t := table.NewWriter()
	t.SetOutputMirror(w)
	t.SetStyle(table.StyleLight)
	st := t.Style()
	st.Options = table.OptionsNoBordersAndSeparators
	st.Box.PaddingLeft, st.Box.PaddingRight = "", "  "
	st.Format.Header = 0 // as written, not upper-cased
	t.AppendHeader(header)
	t.AppendRows(rows)
	t.Render()
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
