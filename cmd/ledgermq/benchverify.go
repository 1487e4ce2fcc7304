package main

// The cluster side of `ledgermq bench produce --verify`: reading sends back
// by offset and counting them by key, over the remoting protocol.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// clusterReader implements bench.Store against a running cluster.
type clusterReader struct {
	a  *admin
	rc *remoting.Client // raw requests to the leaders
	// creds sign every raw request (the run's --access-key, if any): a
	// broker with its ACL on refuses unsigned ones.
	creds auth.Credentials

	mu      sync.Mutex
	leaders map[string]string // broker group -> its leader's address
}

// leader returns group's leader address, asking the name servers again
// when fresh is set or it is not known yet.
func (r *clusterReader) leader(ctx context.Context, group string, fresh bool) (string, error) {
	r.mu.Lock()
	addr, ok := r.leaders[group]
	r.mu.Unlock()
	if ok && !fresh {
		return addr, nil
	}
	_, ls, err := r.a.c.GroupLeader(ctx, group)
	if err != nil {
		return "", err
	}
	r.mu.Lock()
	r.leaders[group] = ls.LeaderAddr
	r.mu.Unlock()
	return ls.LeaderAddr, nil
}

// groups lists the broker groups the name servers know.
func (r *clusterReader) groups(ctx context.Context) ([]string, error) {
	info, err := r.a.c.ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(info.BrokerAddrTable))
	for n := range info.BrokerAddrTable {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// onLeader sends the request built by mk to group's leader, once more to
// a freshly resolved leader if the first attempt fails in transport.
func (r *clusterReader) onLeader(ctx context.Context, group string, mk func() *remoting.Command) (*remoting.Command, error) {
	var lastErr error
	for attempt := 0; attempt < 2; attempt++ {
		addr, err := r.leader(ctx, group, attempt > 0)
		if err != nil {
			return nil, err
		}
		req := mk()
		if r.creds.AccessKey != "" {
			if req.ExtFields == nil {
				req.ExtFields = map[string]string{}
			}
			auth.Sign(req.ExtFields, req.Body, r.creds)
		}
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		resp, err := r.rc.Invoke(cctx, addr, req)
		cancel()
		if err == nil {
			return resp, nil
		}
		lastErr = err
	}
	return nil, lastErr
}

// ByOffset reads the message at offsetMsgID from broker's leader and
// returns its KEYS.
func (r *clusterReader) ByOffset(ctx context.Context, broker, offsetMsgID string) (string, error) {
	_, off, err := message.ParseOffsetMsgID(offsetMsgID)
	if err != nil {
		return "", err
	}
	resp, err := r.onLeader(ctx, broker, func() *remoting.Command {
		return (&protocol.ViewMessageRequestHeader{Offset: off}).Request()
	})
	if err != nil {
		return "", err
	}
	if err := remoting.CheckResponse(resp); err != nil {
		return "", err
	}
	m, _, err := message.DecodeRecord(resp.Body)
	if err != nil {
		return "", err
	}
	return m.Properties[message.PropertyKeys], nil
}

// CountByKey counts topic's stored messages whose KEYS include key, over
// every broker group.
func (r *clusterReader) CountByKey(ctx context.Context, topic, key string) (int, error) {
	groups, err := r.groups(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	type at struct {
		group string
		off   int64
	}
	seen := map[at]bool{} // an index may list one record twice
	for _, g := range groups {
		resp, err := r.onLeader(ctx, g, func() *remoting.Command {
			h := protocol.QueryMessageRequestHeader{Topic: topic, Key: key, MaxNum: 64,
				EndTimestamp: time.Now().Add(time.Hour).UnixMilli()}
			return h.Request()
		})
		if err != nil {
			return 0, err
		}
		if resp.Code == remoting.QueryNotFound {
			continue
		}
		if err := remoting.CheckResponse(resp); err != nil {
			return 0, fmt.Errorf("query %s on %s: %w", key, g, err)
		}
		msgs, err := message.DecodeRecords(resp.Body)
		if err != nil {
			return 0, err
		}
		for _, m := range msgs {
			if seen[at{g, m.PhysicalOffset}] {
				continue
			}
			seen[at{g, m.PhysicalOffset}] = true
			for _, k := range strings.Fields(m.Properties[message.PropertyKeys]) {
				if k == key {
					n++
					break
				}
			}
		}
	}
	return n, nil
}
