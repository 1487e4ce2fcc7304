package main

// `ledgermq admin group …` (mqadmin: updateSubGroup, deleteSubGroup,
// getConsumerConfig, consumerProgress, consumerConnection): subscription
// groups and what their consumers are doing.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
)

func newAdminGroupCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "group", Short: "Consumer groups: create, delete, list, config, progress (lag), connections; producer groups' clients"}
	cmd.AddCommand(newGroupCreateCmd(af, "create"), newGroupDeleteCmd(af, "delete"), newGroupListCmd(af, "list"),
		newGroupConfigCmd(af, "config"), newGroupProgressCmd(af, "progress"), newGroupConnectionsCmd(af, "connections"),
		newProducerConnectionCmd(af, "producers"))
	return cmd
}

func newGroupCreateCmd(af *adminFlags, use string) *cobra.Command {
	var name string
	var t client.Target
	var retries, retryQueues int32
	var brokerID, slowBrokerID int64
	var broadcast, fromMin, enable, orderly, notify bool
	cmd := &cobra.Command{
		Use: use, Short: "Create or update a subscription group on every broker group (or -c, -b, --broker-name)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			cfg := client.DefaultGroupConfig(name)
			cfg.RetryMaxTimes, cfg.RetryQueueNums = retries, retryQueues
			cfg.ConsumeBroadcastEnable, cfg.ConsumeFromMinEnable, cfg.ConsumeEnable, cfg.ConsumeMessageOrderly = broadcast, fromMin, enable, orderly
			cfg.BrokerID, cfg.WhichBrokerWhenConsumeSlowly, cfg.NotifyConsumerIdsChangedEnable = brokerID, slowBrokerID, notify
			groups, err := a.c.CreateGroup(ctx, cfg, t)
			if err != nil {
				return err
			}
			return a.report(map[string]any{"group": name, "brokers": groups, "config": cfg},
				"group %s created or updated on %s\n", name, strings.Join(groups, ", "))
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&name, "group", "g", "", "consumer group name")
	f.Int32VarP(&retries, "retry-max-times", "r", 16, "retries before a message goes to the DLQ")
	f.Int32VarP(&retryQueues, "retry-queues", "q", 1, "queues of the group's %RETRY% topic")
	boolFlag(f, use, &broadcast, "broadcast", "d", true, "allow broadcast consumption")
	boolFlag(f, use, &fromMin, "consume-from-min", "m", true, "a new group starts from the queue's min offset")
	boolFlag(f, use, &enable, "consume-enable", "s", true, "allow consumption")
	boolFlag(f, use, &notify, "notify-ids-changed", "a", true, "tell the group's clients when its members change")
	boolFlag(f, use, &orderly, "orderly", "", false, "consume orderly")
	f.Int64VarP(&brokerID, "broker-id", "i", 0, "brokerId the group consumes from (0: the leader, which serves every read here)")
	f.Int64VarP(&slowBrokerID, "slow-broker-id", "w", 1, "brokerId when consuming slowly (kept for RocketMQ's clients)")
	targetFlags(cmd, &t)
	required(cmd, "group")
	return cmd
}

func newGroupDeleteCmd(af *adminFlags, use string) *cobra.Command {
	var name string
	var t client.Target
	cmd := &cobra.Command{
		Use: use, Short: "Delete a subscription group and its offsets", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if err := a.c.DeleteGroup(ctx, name, t); err != nil {
				return err
			}
			return a.report(map[string]any{"group": name, "deleted": true}, "group %s deleted\n", name)
		}),
	}
	cmd.Flags().StringVarP(&name, "group", "g", "", "consumer group name")
	// The brokers delete a group's offsets with it (a replicated metadata
	// op), so mqadmin's -r false cannot keep them.
	mqNoEffect(cmd.Flags(), use, "removeOffset", "r", true, "remove the offsets too (a group's offsets always go with it)")
	targetFlags(cmd, &t)
	required(cmd, "group")
	return cmd
}

func newGroupListCmd(af *adminFlags, use string) *cobra.Command {
	var t client.Target
	cmd := &cobra.Command{
		Use: use, Short: "List the subscription groups of every broker group", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			gs, err := a.c.ListGroups(ctx, t)
			if err != nil {
				return err
			}
			rows := make([]table.Row, 0, len(gs))
			for _, g := range gs {
				rows = append(rows, table.Row{g.GroupName, g.BrokerName, g.ConsumeEnable, g.ConsumeBroadcastEnable, g.RetryQueueNums, g.RetryMaxTimes})
			}
			return a.emit(map[string]any{"groups": gs}, table.Row{"GROUP", "BROKER", "ENABLED", "BROADCAST", "RETRY QUEUES", "RETRY MAX"}, rows)
		}),
	}
	targetFlags(cmd, &t)
	return cmd
}

func newGroupProgressCmd(af *adminFlags, use string) *cobra.Command {
	var group, topic string
	cmd := &cobra.Command{
		Use: use, Short: "Per queue: broker offset, consumer offset, lag (without -g: every group's total lag)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if group == "" {
				return a.allGroupsLag(ctx, topic)
			}
			p, err := a.c.ConsumerProgress(ctx, group, topic)
			if err != nil {
				return err
			}
			rows := make([]table.Row, 0, len(p.Queues))
			for _, q := range p.Queues {
				rows = append(rows, table.Row{q.Topic, q.BrokerName, q.QueueID, q.BrokerOffset, q.ConsumerOffset, q.Lag, fmtTime(q.LastConsumed)})
			}
			if a.json {
				return printJSON(a.out, p)
			}
			printTable(a.out, table.Row{"TOPIC", "BROKER", "QID", "BROKER OFFSET", "CONSUMER OFFSET", "LAG", "LAST CONSUMED"}, rows)
			return a.report(nil, "total lag: %d\n", p.TotalLag)
		}),
	}
	cmd.Flags().StringVarP(&group, "group", "g", "", "consumer group name (default: every group, one line each)")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "only this topic")
	mqNoEffect(cmd.Flags(), use, "showClientIP", "s", true, "client address per queue")
	return cmd
}

// groupLag is one group's line of a progress without -g.
type groupLag struct {
	Group    string `json:"group"`
	Queues   int    `json:"queues"`
	TotalLag int64  `json:"totalLag"`
}

// allGroupsLag prints every subscription group's total lag (groups that
// have consumed nothing are left out), as mqadmin's consumerProgress does
// without -g.
func (a *admin) allGroupsLag(ctx context.Context, topic string) error {
	configs, err := a.c.ListGroups(ctx, client.Target{})
	if err != nil {
		return err
	}
	out := []groupLag{}
	var rows []table.Row
	seen := map[string]bool{}
	for _, c := range configs {
		if seen[c.GroupName] {
			continue // the same group on another broker group: ConsumerProgress covers them all
		}
		seen[c.GroupName] = true
		p, err := a.c.ConsumerProgress(ctx, c.GroupName, topic)
		if errors.Is(err, client.ErrNoSuchGroup) {
			continue
		}
		if err != nil {
			return err
		}
		out = append(out, groupLag{Group: c.GroupName, Queues: len(p.Queues), TotalLag: p.TotalLag})
		rows = append(rows, table.Row{c.GroupName, len(p.Queues), p.TotalLag})
	}
	return a.emit(map[string]any{"groups": out}, table.Row{"GROUP", "QUEUES", "TOTAL LAG"}, rows)
}

func newGroupConnectionsCmd(af *adminFlags, use string) *cobra.Command {
	var group, addr string
	cmd := &cobra.Command{
		Use: use, Short: "The group's online clients and their subscriptions", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			cc, err := a.c.ConsumerConnections(ctx, group)
			if err != nil {
				return err
			}
			if addr != "" {
				cc.Clients = slices.DeleteFunc(cc.Clients, func(c client.ConsumerClient) bool { return !slices.Contains(c.Brokers, addr) })
			}
			if a.json {
				return printJSON(a.out, cc)
			}
			rows := make([]table.Row, 0, len(cc.Clients))
			for _, c := range cc.Clients {
				rows = append(rows, table.Row{c.ClientID, c.ClientAddr, c.Language, c.Version, strings.Join(c.Brokers, " ")})
			}
			printTable(a.out, table.Row{"CLIENT", "ADDR", "LANGUAGE", "VERSION", "BROKERS"}, rows)
			srows := make([]table.Row, 0, len(cc.Subscriptions))
			for _, s := range cc.Subscriptions {
				srows = append(srows, table.Row{s.Topic, s.SubString, s.ExpressionType})
			}
			printTable(a.out, table.Row{"TOPIC", "EXPRESSION", "TYPE"}, srows)
			return a.report(nil, "consume type %s, message model %s, consume from %s\n", cc.ConsumeType, cc.MessageModel, cc.ConsumeFromWhere)
		}),
	}
	cmd.Flags().StringVarP(&group, "group", "g", "", "consumer group name")
	cmd.Flags().StringVarP(&addr, "broker-addr", "b", "", "only the clients connected to this broker node")
	required(cmd, "group")
	return cmd
}

func newGroupConfigCmd(af *adminFlags, use string) *cobra.Command {
	var name string
	cmd := &cobra.Command{
		Use: use, Short: "A subscription group's config on each broker group", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			gs, err := a.c.ListGroups(ctx, client.Target{})
			if err != nil {
				return err
			}
			gs = slices.DeleteFunc(gs, func(g client.BrokerGroupConfig) bool { return g.GroupName != name })
			if len(gs) == 0 {
				return fmt.Errorf("%w: %s", client.ErrNoSuchGroup, name)
			}
			rows := make([]table.Row, 0, len(gs))
			for _, g := range gs {
				rows = append(rows, table.Row{g.GroupName, g.BrokerName, g.ConsumeEnable, g.ConsumeFromMinEnable, g.ConsumeBroadcastEnable,
					g.ConsumeMessageOrderly, g.RetryQueueNums, g.RetryMaxTimes, g.BrokerID, g.WhichBrokerWhenConsumeSlowly})
			}
			return a.emit(map[string]any{"groups": gs}, table.Row{"GROUP", "BROKER", "ENABLED", "FROM MIN", "BROADCAST", "ORDERLY",
				"RETRY QUEUES", "RETRY MAX", "BROKER ID", "SLOW BROKER ID"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&name, "group", "g", "", "consumer group name")
	required(cmd, "group")
	return cmd
}
