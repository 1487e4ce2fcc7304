package main

// `ledgermq admin group …` (mqadmin: updateSubGroup, deleteSubGroup,
// consumerProgress, consumerConnection): subscription groups and what
// their consumers are doing.

import (
	"context"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
)

func newAdminGroupCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "group", Short: "Consumer groups: create, delete, list, progress (lag), connections"}
	cmd.AddCommand(newGroupCreateCmd(af, "create"), newGroupDeleteCmd(af, "delete"), newGroupListCmd(af, "list"),
		newGroupProgressCmd(af, "progress"), newGroupConnectionsCmd(af, "connections"))
	return cmd
}

func newGroupCreateCmd(af *adminFlags, use string) *cobra.Command {
	var name string
	var t client.Target
	var retries, retryQueues int32
	var broadcast, fromMin, enable, orderly bool
	cmd := &cobra.Command{
		Use: use, Short: "Create or update a subscription group on every broker group (or -c, -b, --broker-name)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			cfg := client.DefaultGroupConfig(name)
			cfg.RetryMaxTimes, cfg.RetryQueueNums = retries, retryQueues
			cfg.ConsumeBroadcastEnable, cfg.ConsumeFromMinEnable, cfg.ConsumeEnable, cfg.ConsumeMessageOrderly = broadcast, fromMin, enable, orderly
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
	f.BoolVarP(&broadcast, "broadcast", "d", true, "allow broadcast consumption")
	f.BoolVarP(&fromMin, "consume-from-min", "m", true, "a new group starts from the queue's min offset")
	f.BoolVarP(&enable, "consume-enable", "s", true, "allow consumption")
	f.BoolVar(&orderly, "orderly", false, "consume orderly")
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
		Use: use, Short: "Per queue: broker offset, consumer offset, lag", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
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
	cmd.Flags().StringVarP(&group, "group", "g", "", "consumer group name")
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "only this topic")
	required(cmd, "group")
	return cmd
}

func newGroupConnectionsCmd(af *adminFlags, use string) *cobra.Command {
	var group string
	cmd := &cobra.Command{
		Use: use, Short: "The group's online clients and their subscriptions", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			cc, err := a.c.ConsumerConnections(ctx, group)
			if err != nil {
				return err
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
	required(cmd, "group")
	return cmd
}
