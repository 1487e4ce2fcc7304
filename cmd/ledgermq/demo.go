package main

import (
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/store"
)

func newDemoCmd() *cobra.Command {
	var (
		dir      string
		topic    string
		count    int
		queues   int
		segment  int64
		syncMode bool
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Write messages to a local store, read them back and show where they went",
		Long: "demo opens (or reopens) a message store in --dir, appends --count messages to --queues\n" +
			"queues of --topic in batches, reads every queue back from offset 0, looks one message up by\n" +
			"its key and one by its offset message id, and prints what it did. Run it twice: the second run\n" +
			"recovers the store and continues the queues where the first stopped.",
		RunE: func(cmd *cobra.Command, _ []string) error {
			out := cmd.OutOrStdout()
			cfg := store.DefaultConfig(dir)
			cfg.SegmentSize = segment
			if syncMode {
				cfg.FlushMode = store.FlushSync
			}
			opened := time.Now()
			st, err := store.Open(cfg)
			if err != nil {
				return err
			}
			defer st.Close()
			rep := st.Recovery()
			fmt.Fprintf(out, "store %s opened in %v (clean=%v, commitlog %d..%d, last batch seq %d)\n",
				dir, time.Since(opened).Round(time.Microsecond), rep.Clean, st.MinPhysicalOffset(), rep.End, st.LastSeq())

			host := netip.MustParseAddrPort("127.0.0.1:10911")
			ids := message.NewUniqIDGenerator(host.Addr(), os.Getpid(), time.Now)
			started := time.Now()
			var last store.PutResult
			for sent := 0; sent < count; {
				n := min(32, count-sent)
				batch := make([]*message.Ext, n)
				for i := range batch {
					seq := sent + i
					m := &message.Ext{
						Message: message.Message{
							Topic: topic,
							Body:  []byte(fmt.Sprintf("hello %d from ledgermq", seq)),
						},
						QueueID:        int32(seq % queues),
						BornTimestamp:  time.Now().UnixMilli(),
						BornHost:       netip.MustParseAddrPort("127.0.0.1:40000"),
						StoreTimestamp: time.Now().UnixMilli(),
						StoreHost:      host,
					}
					m.SetProperty(message.PropertyTags, "TagA")
					m.SetProperty(message.PropertyKeys, "order-"+strconv.Itoa(seq))
					m.SetProperty(message.PropertyUniqKey, ids.Next())
					batch[i] = m
				}
				res, err := st.Put(0, batch)
				if err != nil {
					return err
				}
				last = res[len(res)-1]
				sent += n
			}
			took := time.Since(started)
			fmt.Fprintf(out, "put %d messages in %v (%.0f msg/s); last at commitlog offset %d, msgId %s\n",
				count, took.Round(time.Microsecond), float64(count)/took.Seconds(), last.PhysicalOffset, last.MsgID)

			filter := store.NewTagFilter("TagA")
			for q := 0; q < queues; q++ {
				read, off := 0, int64(0)
				for {
					res, err := st.Get(topic, int32(q), off, 32, filter)
					if err != nil {
						return err
					}
					read += len(res.Records)
					off = res.NextBeginOffset
					res.Release()
					if res.Status != store.Found {
						break
					}
				}
				fmt.Fprintf(out, "queue %s/%d: read %d messages, next offset %d\n", topic, q, read, off)
			}
			if m, err := st.MessageByID(last.MsgID); err == nil {
				fmt.Fprintf(out, "by msgId %s: %q (queue %d offset %d)\n", last.MsgID, m.Body, m.QueueID, m.QueueOffset)
			} else {
				return err
			}
			key := "order-" + strconv.Itoa(count-1)
			found, err := st.QueryByKey(topic, key, 4, 0, time.Now().UnixMilli()+1000)
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "by key %s: %d message(s)\n", key, len(found))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", ".run/store", "store directory")
	cmd.Flags().StringVar(&topic, "topic", "DemoTopic", "topic to write")
	cmd.Flags().IntVar(&count, "count", 10000, "messages to write")
	cmd.Flags().IntVar(&queues, "queues", 4, "queues of the topic")
	cmd.Flags().Int64Var(&segment, "segment-size", 64<<20, "commitlog segment size in bytes")
	cmd.Flags().BoolVar(&syncMode, "sync", false, "SYNC_FLUSH: every batch is on disk before Put returns")
	return cmd
}
