package client

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// The name servers' KV configuration and the brokers' write permission in
// routes (mqadmin updateKvConfig, deleteKvConfig, updateOrderConf,
// wipeWritePerm, addWritePerm). Name servers share nothing, so a change
// is sent to every one of them, as mqadmin does.

// ErrNoSuchKV is GET_KV_CONFIG's or GET_KVLIST_BY_NAMESPACE's
// QUERY_NOT_FOUND: no name server has the key or the namespace.
var ErrNoSuchKV = errors.New("client: no such KV config item")

// PutKVConfig sets namespace/key to value on every name server
// (PUT_KV_CONFIG, 100).
func (a *Admin) PutKVConfig(ctx context.Context, namespace, key, value string) error {
	h := protocol.KVConfigRequestHeader{Namespace: namespace, Key: key, Value: value}
	return a.everyNameServer(ctx, func() *remoting.Command { return h.Request(remoting.PutKVConfig) })
}

// DeleteKVConfig removes namespace/key from every name server
// (DELETE_KV_CONFIG, 102).
func (a *Admin) DeleteKVConfig(ctx context.Context, namespace, key string) error {
	h := protocol.KVConfigRequestHeader{Namespace: namespace, Key: key}
	return a.everyNameServer(ctx, func() *remoting.Command { return h.Request(remoting.DeleteKVConfig) })
}

// KVConfig returns namespace/key from the first name server that has it
// (GET_KV_CONFIG, 101); ErrNoSuchKV when none has.
func (a *Admin) KVConfig(ctx context.Context, namespace, key string) (string, error) {
	h := protocol.KVConfigRequestHeader{Namespace: namespace, Key: key}
	resp, _, err := a.askNameServers(ctx, func() *remoting.Command { return h.Request(remoting.GetKVConfig) })
	if err != nil {
		return "", notFoundKV(err)
	}
	var rh protocol.GetKVConfigResponseHeader
	_ = rh.Decode(resp.ExtFields)
	return rh.Value, nil
}

// KVList returns namespace's table from the first name server that has
// one (GET_KVLIST_BY_NAMESPACE, 219); ErrNoSuchKV when none has.
func (a *Admin) KVList(ctx context.Context, namespace string) (map[string]string, error) {
	h := protocol.GetKVListByNamespaceRequestHeader{Namespace: namespace}
	resp, ns, err := a.askNameServers(ctx, h.Request)
	if err != nil {
		return nil, notFoundKV(err)
	}
	t, err := protocol.DecodeKVTable(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: KV list from %s: %w", ns, err)
	}
	return t.Table, nil
}

// notFoundKV makes an answer of QUERY_NOT_FOUND from every name server
// ErrNoSuchKV.
func notFoundKV(err error) error {
	var be *BrokerError
	if errors.As(err, &be) && be.Code == remoting.QueryNotFound {
		return fmt.Errorf("%w: %w", ErrNoSuchKV, err)
	}
	return err
}

// WritePermResult is one name server's answer to WIPE_WRITE_PERM_OF_BROKER
// or ADD_WRITE_PERM_OF_BROKER: how many topics' queues it changed.
type WritePermResult struct {
	NameServer string `json:"namesrv"`
	Topics     int    `json:"topics"`
}

// SetWritePerm takes write permission from the broker group's queues in
// every name server's routes (writable false: WIPE_WRITE_PERM_OF_BROKER,
// 205), or gives the queues read and write permission (true:
// ADD_WRITE_PERM_OF_BROKER, 327), and returns each name server's count.
func (a *Admin) SetWritePerm(ctx context.Context, brokerName string, writable bool) ([]WritePermResult, error) {
	code := remoting.WipeWritePermOfBroker
	if writable {
		code = remoting.AddWritePermOfBroker
	}
	h := protocol.BrokerPermRequestHeader{BrokerName: brokerName}
	var out []WritePermResult
	var errs []error
	for _, ns := range a.opts.nameServers {
		resp, err := a.call(ctx, ns, h.Request(code), 0)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		n, err := strconv.Atoi(resp.ExtFields[protocol.WritePermCountField(code)])
		if err != nil {
			errs = append(errs, fmt.Errorf("client: %s from %s: bad count: %w", remoting.RequestCodeName(code), ns, err))
			continue
		}
		out = append(out, WritePermResult{NameServer: ns, Topics: n})
	}
	return out, errors.Join(errs...)
}

// everyNameServer sends req to every name server and joins their errors.
func (a *Admin) everyNameServer(ctx context.Context, req func() *remoting.Command) error {
	var errs []error
	for _, ns := range a.opts.nameServers {
		if _, err := a.call(ctx, ns, req(), 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
