package main

// `ledgermq admin topic …` (mqadmin: updateTopic, deleteTopic, topicList,
// topicRoute, topicStatus, topicClusterList), and the builder type the
// verbs share with their mqadmin names (admin_mqadmin.go).
//
// Flags follow mqadmin where it has them (-t topic, -c cluster, -b broker
// address, -r/-w queue counts, -p perm; on updateTopic -o order).

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/client"
)

// verb builds one admin command; the same builder makes the grouped verb
// and its mqadmin name, so both take the same flags (mqadminVerb(use)
// says which it makes).
type verb func(af *adminFlags, use string) *cobra.Command

func newAdminTopicCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "topic", Short: "Topics: create, delete, list, route, status, clusters"}
	cmd.AddCommand(newTopicCreateCmd(af, "create"), newTopicDeleteCmd(af, "delete"), newTopicListCmd(af, "list"),
		newTopicRouteCmd(af, "route"), newTopicStatusCmd(af, "status"), newTopicClustersCmd(af, "clusters"))
	return cmd
}

// targetFlags are -c, -b and --broker-name: which broker groups a write
// goes to.
func targetFlags(cmd *cobra.Command, t *client.Target) {
	f := cmd.Flags()
	f.StringVarP(&t.Cluster, "cluster", "c", "", "every broker group of this cluster")
	f.StringVarP(&t.BrokerAddr, "broker-addr", "b", "", "one broker node, by address")
	f.StringVar(&t.BrokerName, "broker-name", "", "one broker group, by name")
}

// required marks flags required, panicking on a typo (a programming error).
func required(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		if err := cmd.MarkFlagRequired(n); err != nil {
			panic(err)
		}
	}
}

func newTopicCreateCmd(af *adminFlags, use string) *cobra.Command {
	var tc client.TopicConfig
	var t client.Target
	cmd := &cobra.Command{
		Use: use, Short: "Create or update a topic on every broker group (or -c, -b, --broker-name)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			groups, err := a.c.CreateTopic(ctx, tc, t)
			if err != nil {
				return err
			}
			return a.report(map[string]any{"topic": tc.Topic, "brokers": groups},
				"topic %s created or updated on %s\n", tc.Topic, strings.Join(groups, ", "))
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&tc.Topic, "topic", "t", "", "topic name")
	f.Int32VarP(&tc.ReadQueues, "read-queues", "r", 8, "read queue count")
	f.Int32VarP(&tc.WriteQueues, "write-queues", "w", 8, "write queue count")
	f.Int32VarP(&tc.Perm, "perm", "p", 6, "permission: 2 write, 4 read, 6 both")
	boolFlag(f, use, &tc.Order, "order", mqShort(use, "o"), false, "ordered topic")
	f.StringVarP(&tc.Attributes, "attributes", "a", "", "attribute changes: +key=value sets, -key removes, comma-separated (+dedup.window=0 turns the duplicate window off for the topic)")
	mqNoEffect(f, use, "unit", "u", true, "unit topic")
	mqNoEffect(f, use, "hasUnitSub", "s", true, "unit subscription")
	targetFlags(cmd, &t)
	required(cmd, "topic")
	return cmd
}

func newTopicDeleteCmd(af *adminFlags, use string) *cobra.Command {
	var topic string
	var t client.Target
	cmd := &cobra.Command{
		Use: use, Short: "Delete a topic from the broker groups, then from the name servers", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if err := a.c.DeleteTopic(ctx, topic, t); err != nil {
				return err
			}
			return a.report(map[string]any{"topic": topic, "deleted": true}, "topic %s deleted\n", topic)
		}),
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	targetFlags(cmd, &t)
	required(cmd, "topic")
	return cmd
}

func newTopicListCmd(af *adminFlags, use string) *cobra.Command {
	cmd := &cobra.Command{
		Use: use, Short: "List every topic the name servers know", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			topics, err := a.c.ListTopics(ctx)
			if err != nil {
				return err
			}
			rows := make([]table.Row, 0, len(topics))
			for _, t := range topics {
				rows = append(rows, table.Row{t})
			}
			return a.emit(map[string]any{"topics": topics}, table.Row{"TOPIC"}, rows)
		}),
	}
	mqNoEffect(cmd.Flags(), use, "clusterModel", "c", false, "topics with their clusters and groups")
	return cmd
}

func newTopicRouteCmd(af *adminFlags, use string) *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use: use, Short: "The route clients get: broker groups, their members by brokerId, queue counts", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			rd, err := a.c.TopicRoute(ctx, topic)
			if err != nil {
				return err
			}
			var rows []table.Row
			for _, bd := range rd.BrokerDatas {
				ids := make([]int64, 0, len(bd.BrokerAddrs))
				for id := range bd.BrokerAddrs {
					ids = append(ids, id)
				}
				sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
				var addrs []string
				for _, id := range ids {
					addrs = append(addrs, fmt.Sprintf("%d=%s", id, bd.BrokerAddrs[id]))
				}
				row := table.Row{bd.BrokerName, bd.Cluster, strings.Join(addrs, " "), "-", "-", "-"}
				for _, q := range rd.QueueDatas {
					if q.BrokerName == bd.BrokerName {
						row[3], row[4], row[5] = q.ReadQueueNums, q.WriteQueueNums, q.Perm
					}
				}
				rows = append(rows, row)
			}
			return a.emit(rd, table.Row{"BROKER", "CLUSTER", "ADDRS", "READ", "WRITE", "PERM"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	mqNoEffect(cmd.Flags(), use, "list", "l", false, "list format")
	required(cmd, "topic")
	return cmd
}

func newTopicClustersCmd(af *adminFlags, use string) *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use: use, Short: "The clusters whose broker groups serve a topic", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			rd, err := a.c.TopicRoute(ctx, topic)
			if err != nil {
				return err
			}
			clusters := []string{}
			for _, bd := range rd.BrokerDatas {
				if !slices.Contains(clusters, bd.Cluster) {
					clusters = append(clusters, bd.Cluster)
				}
			}
			sort.Strings(clusters)
			rows := make([]table.Row, 0, len(clusters))
			for _, c := range clusters {
				rows = append(rows, table.Row{c})
			}
			return a.emit(map[string]any{"topic": topic, "clusters": clusters}, table.Row{"CLUSTER"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	required(cmd, "topic")
	return cmd
}

func newTopicStatusCmd(af *adminFlags, use string) *cobra.Command {
	var topic string
	cmd := &cobra.Command{
		Use: use, Short: "Per queue: min offset, max offset, last update time", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			qs, err := a.c.TopicStatus(ctx, topic)
			if err != nil {
				return err
			}
			rows := make([]table.Row, 0, len(qs))
			for _, q := range qs {
				rows = append(rows, table.Row{q.BrokerName, q.QueueID, q.MinOffset, q.MaxOffset, fmtTime(q.LastUpdate)})
			}
			return a.emit(map[string]any{"topic": topic, "queues": qs}, table.Row{"BROKER", "QID", "MIN", "MAX", "LAST UPDATE"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&topic, "topic", "t", "", "topic name")
	required(cmd, "topic")
	return cmd
}
