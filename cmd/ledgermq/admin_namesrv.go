package main

// `ledgermq admin namesrv …` (mqadmin: updateKvConfig, deleteKvConfig,
// updateOrderConf, wipeWritePerm, addWritePerm): the name servers' KV
// configuration and the broker groups' write permission in their routes.
// Changes go to every name server (-n), as mqadmin sends them.

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/jedib0t/go-pretty/v6/table"
	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/protocol"
)

func newAdminNamesrvCmd(af *adminFlags) *cobra.Command {
	cmd := &cobra.Command{Use: "namesrv", Short: "Name servers: KV configuration, ordered topics' broker lists, brokers' write permission in routes"}
	cmd.AddCommand(newKVPutCmd(af, "kv-put"), newKVGetCmd(af, "kv-get"), newKVDeleteCmd(af, "kv-delete"),
		newKVListCmd(af, "kv-list"), newOrderConfCmd(af, "order-conf"),
		newWritePermCmd(af, "wipe-write-perm", false), newWritePermCmd(af, "add-write-perm", true))
	return cmd
}

func newKVPutCmd(af *adminFlags, use string) *cobra.Command {
	var ns, key, value string
	cmd := &cobra.Command{
		Use: use, Short: "Set a KV configuration item on every name server (PUT_KV_CONFIG)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if err := a.c.PutKVConfig(ctx, ns, key, value); err != nil {
				return err
			}
			return a.report(map[string]any{"namespace": ns, "key": key, "value": value},
				"create or update kv config to namespace success.\n")
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&ns, "namespace", "s", "", "namespace")
	f.StringVarP(&key, "key", "k", "", "key")
	f.StringVarP(&value, "value", "v", "", "value")
	required(cmd, "namespace", "key", "value")
	return cmd
}

func newKVDeleteCmd(af *adminFlags, use string) *cobra.Command {
	var ns, key string
	cmd := &cobra.Command{
		Use: use, Short: "Delete a KV configuration item from every name server (DELETE_KV_CONFIG)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			if err := a.c.DeleteKVConfig(ctx, ns, key); err != nil {
				return err
			}
			return a.report(map[string]any{"namespace": ns, "key": key, "deleted": true},
				"delete kv config from namespace success.\n")
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&ns, "namespace", "s", "", "namespace")
	f.StringVarP(&key, "key", "k", "", "key")
	required(cmd, "namespace", "key")
	return cmd
}

func newKVGetCmd(af *adminFlags, use string) *cobra.Command {
	var ns, key string
	cmd := &cobra.Command{
		Use: use, Short: "A KV configuration item, from the first name server that has it (GET_KV_CONFIG)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			v, err := a.c.KVConfig(ctx, ns, key)
			if err != nil {
				return err
			}
			return a.report(map[string]any{"namespace": ns, "key": key, "value": v}, "%s\n", v)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&ns, "namespace", "s", "", "namespace")
	f.StringVarP(&key, "key", "k", "", "key")
	required(cmd, "namespace", "key")
	return cmd
}

func newKVListCmd(af *adminFlags, use string) *cobra.Command {
	var ns string
	cmd := &cobra.Command{
		Use: use, Short: "A namespace's KV configuration, from the first name server that has one (GET_KVLIST_BY_NAMESPACE)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			t, err := a.c.KVList(ctx, ns)
			if err != nil {
				return err
			}
			rows := make([]table.Row, 0, len(t))
			for _, k := range slices.Sorted(maps.Keys(t)) {
				rows = append(rows, table.Row{k, t[k]})
			}
			return a.emit(map[string]any{"namespace": ns, "table": t}, table.Row{"KEY", "VALUE"}, rows)
		}),
	}
	cmd.Flags().StringVarP(&ns, "namespace", "s", "", "namespace")
	required(cmd, "namespace")
	return cmd
}

// newOrderConfCmd is mqadmin's updateOrderConf: an ordered topic's broker
// list ("broker-a:4;broker-b:4") in the name servers' ORDER_TOPIC_CONFIG
// namespace, which clients get as the route's orderTopicConf.
func newOrderConfCmd(af *adminFlags, use string) *cobra.Command {
	var topic, method, conf string
	cmd := &cobra.Command{
		Use: use, Short: "Get, put or delete an ordered topic's broker list (the name servers' ORDER_TOPIC_CONFIG)", Args: cobra.NoArgs,
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			switch method {
			case "get":
				v, err := a.c.KVConfig(ctx, protocol.NamespaceOrderTopicConfig, topic)
				if err != nil {
					return err
				}
				return a.report(map[string]any{"topic": topic, "orderConf": v}, "get orderConf success. topic=[%s], orderConf=[%s]\n", topic, v)
			case "put":
				if conf == "" {
					return fmt.Errorf("%w: put needs -v ORDER_CONF (broker-a:4;broker-b:4)", errAdmin)
				}
				if err := a.c.PutKVConfig(ctx, protocol.NamespaceOrderTopicConfig, topic, conf); err != nil {
					return err
				}
				return a.report(map[string]any{"topic": topic, "orderConf": conf}, "update orderConf success. topic=[%s], orderConf=[%s]\n", topic, conf)
			case "delete":
				if err := a.c.DeleteKVConfig(ctx, protocol.NamespaceOrderTopicConfig, topic); err != nil {
					return err
				}
				return a.report(map[string]any{"topic": topic, "deleted": true}, "remove orderConf success. topic=[%s]\n", topic)
			}
			return fmt.Errorf("%w: -m %q: want get, put or delete", errAdmin, method)
		}),
	}
	f := cmd.Flags()
	f.StringVarP(&topic, "topic", "t", "", "topic")
	f.StringVarP(&method, "method", "m", "", "get, put or delete")
	f.StringVarP(&conf, "orderConf", "v", "", "the broker list for put: broker-a:4;broker-b:4")
	required(cmd, "topic", "method")
	return cmd
}

// newWritePermCmd is mqadmin's wipeWritePerm (writable false) and
// addWritePerm (true).
func newWritePermCmd(af *adminFlags, use string, writable bool) *cobra.Command {
	var brokerName string
	short := "Take write permission from a broker group's queues in every name server's routes (WIPE_WRITE_PERM_OF_BROKER)"
	what := "wipe"
	if writable {
		short = "Give a broker group's queues read and write permission in every name server's routes (ADD_WRITE_PERM_OF_BROKER)"
		what = "add"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.NoArgs,
		Long: short + ".\nIt lasts until the group's leader registers a changed topic table or a new leader registers;\n" +
			"to take a node out of service, admin broker drain NODE moves leadership away instead.",
		RunE: af.run(func(ctx context.Context, a *admin, _ []string) error {
			res, err := a.c.SetWritePerm(ctx, brokerName, writable)
			if a.json {
				if perr := printJSON(a.out, map[string]any{"brokerName": brokerName, "namesrvs": res}); perr != nil {
					return perr
				}
				return err
			}
			for _, r := range res {
				if _, perr := fmt.Fprintf(a.out, "%s write perm of broker[%s] in name server[%s] OK, %d\n", what, brokerName, r.NameServer, r.Topics); perr != nil {
					return perr
				}
			}
			return err
		}),
	}
	cmd.Flags().StringVarP(&brokerName, "brokerName", "b", "", "broker group name")
	required(cmd, "brokerName")
	return cmd
}
