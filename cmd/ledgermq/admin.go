package main

// `ledgermq admin …`: operator commands against a running cluster, found
// through its name servers (-n, as RocketMQ's mqadmin). Each verb asks the
// name servers for the broker groups and their members (brokerId 0 is a
// group's raft leader), then talks to the brokers over the RocketMQ
// remoting protocol; ledgermq's raft requests (4001–4004, remoting/codes.go)
// cover what RocketMQ has no request for. Output is an aligned table for
// people, or JSON with --output json (-o json). Every verb is bounded by
// --timeout. admin_mqadmin.go has the table of RocketMQ 4.9's mqadmin
// verbs: each is served, with mqadmin's flags, or refused with a pointer.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
	"github.com/ledgermq/ledgermq/protocol"
)

// errAdmin is every admin verb's failure that is not the cluster's answer.
var errAdmin = errors.New("admin")

// adminFlags are the flags every admin verb shares.
type adminFlags struct {
	namesrv string
	output  string
	timeout time.Duration
	tls     tlsFlags
}

// Help groups of admin's verbs.
const (
	groupVerbs     = "verbs"
	groupMqadmin   = "mqadmin"
	groupNotServed = "not-served"
)

func newAdminCmd() *cobra.Command {
	af := &adminFlags{}
	cmd := &cobra.Command{
		Use:   "admin",
		Short: "Operate a running cluster: topics, groups, offsets, messages, cluster and raft members, pending work",
		Long: "admin talks to a running cluster through its name servers (-n host:port;host:port, or\n" +
			"the NAMESRV_ADDR environment variable, as RocketMQ's mqadmin). Verbs are grouped as topic, group,\n" +
			"offset, msg, cluster, broker, raft, pending and namesrv; they print text tables, or JSON with -o json.\n" +
			"Every verb of RocketMQ 4.9's mqadmin is here too: served with mqadmin's flags (-o is then the\n" +
			"verb's own where mqadmin has one, and --output json asks for JSON), or, where ledgermq has no\n" +
			"such thing, refused with what to use instead.",
	}
	pf := cmd.PersistentFlags()
	pf.StringVarP(&af.namesrv, "namesrv", "n", defaultNamesrv(), namesrvUsage)
	// No shorthand here: a verb gets -o for it unless -o is the verb's own
	// (mqadmin's -o offset, -o order); see outputShorthand.
	pf.StringVar(&af.output, "output", "text", outputUsage)
	pf.DurationVar(&af.timeout, "timeout", 60*time.Second, "bound on the whole command")
	af.tls.add(pf)
	cmd.AddGroup(&cobra.Group{ID: groupVerbs, Title: "Verbs:"},
		&cobra.Group{ID: groupMqadmin, Title: "RocketMQ mqadmin verbs, with mqadmin's flags:"},
		&cobra.Group{ID: groupNotServed, Title: "mqadmin verbs ledgermq does not serve (each exits 1 and says what to use instead):"})
	for _, c := range []*cobra.Command{newAdminRaftCmd(af), newAdminTopicCmd(af), newAdminGroupCmd(af), newAdminOffsetCmd(af),
		newAdminMsgCmd(af), newAdminClusterCmd(af), newAdminBrokerCmd(af), newAdminPendingCmd(af), newAdminNamesrvCmd(af)} {
		c.GroupID = groupVerbs
		cmd.AddCommand(c)
	}
	cmd.AddCommand(mqadminVerbs(af)...)
	outputShorthand(cmd, af)
	return cmd
}

// outputShorthand gives every verb under cmd -o for --output, unless the
// verb has a -o of its own or takes its words unparsed.
func outputShorthand(cmd *cobra.Command, af *adminFlags) {
	if !cmd.HasSubCommands() {
		// cmd.Flags() holds the verb's own flags only until cobra merges
		// the inherited ones in at parse time (LocalFlags would do it now,
		// and the inherited --output would then clash with this one).
		if !cmd.DisableFlagParsing && cmd.Flags().ShorthandLookup("o") == nil {
			cmd.Flags().StringVarP(&af.output, "output", "o", "text", outputUsage)
		}
		return
	}
	for _, c := range cmd.Commands() {
		outputShorthand(c, af)
	}
}

// admin is one run of an admin verb: a client.Admin and where to print.
type admin struct {
	c    *client.Admin
	json bool
	out  io.Writer
}

// open checks the shared flags and makes a client.Admin (it connects
// lazily). The caller closes the returned admin.
func (af *adminFlags) open(cmd *cobra.Command) (*admin, context.Context, context.CancelFunc, error) {
	asJSON, err := outputJSON(af.output)
	if err != nil {
		return nil, nil, nil, err
	}
	ns := splitNamesrv(af.namesrv)
	if len(ns) == 0 {
		return nil, nil, nil, fmt.Errorf("%w: no name server: give -n host:port or set NAMESRV_ADDR", errAdmin)
	}
	if err := af.tls.check(); err != nil {
		return nil, nil, nil, err
	}
	c, err := client.NewAdmin(append([]client.AdminOption{client.WithAdminNameServers(ns...)}, af.tls.adminOptions()...)...)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w: %w", errAdmin, err)
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), af.timeout)
	return &admin{c: c, json: asJSON, out: cmd.OutOrStdout()}, ctx, cancel, nil
}

func (a *admin) Close() error { return a.c.Close() }

// run is a verb's RunE that opens an admin run before calling f.
func (af *adminFlags) run(f func(ctx context.Context, a *admin, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a, ctx, cancel, err := af.open(cmd)
		if err != nil {
			return err
		}
		defer cancel()
		defer a.Close()
		return f(ctx, a, args)
	}
}

// raftStatus asks the node at addr for its raft view.
func (a *admin) raftStatus(ctx context.Context, addr string) (protocol.RaftStatus, error) {
	return a.c.RaftStatus(ctx, addr)
}

// emit prints v as JSON, or the table for people.
func (a *admin) emit(v any, header table.Row, rows []table.Row) error {
	if a.json {
		return printJSON(a.out, v)
	}
	printTable(a.out, header, rows)
	return nil
}

// fmtTime renders a time for tables: "-" for the zero time.
func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format("2006-01-02 15:04:05.000")
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
