package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// errTopicNotExist: a name server answered TOPIC_NOT_EXIST.
var errTopicNotExist = errors.New("client: topic not on the name server")

// core is what every client of a process shares: the remoting client (one
// connection per address, to name servers and brokers), the route cache,
// the latency fault table and the UNIQ_KEY generator. Producers and
// consumers own one each; admin will share it. A consumer's core serves
// the requests brokers send (NOTIFY_CONSUMER_IDS_CHANGED) through
// options.onRequest.
//
// Goroutines, all finished when close returns: the route refresh loop,
// one goroutine per route fetch in flight, and the remoting client's own
// (read loops, async callbacks).
type core struct {
	opts   options
	rc     *rpcClient
	routes *routeCache
	faults *faultTable
	ids    *message.UniqIDGenerator
	nsNext atomic.Uint32

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newCore(o options) *core {
	ctx, cancel := context.WithCancel(context.Background())
	c := &core{
		opts:   o,
		faults: newFaultTable(o.now),
		ids:    message.NewUniqIDGenerator(localIP(), os.Getpid(), nil),
		ctx:    ctx,
		cancel: cancel,
	}
	c.rc = newRPC(remoting.NewClient(remoting.ClientConfig{Logger: o.logger.Named("remoting"), Dial: c.dial, OnRequest: o.onRequest,
		RawSocketIO: true}), o.creds)
	c.routes = newRouteCache(ctx, &c.wg, o.logger, c.fetchRoute)
	c.wg.Add(1)
	go c.refreshLoop()
	return c
}

// close stops the refresh loop and the fetches in flight, then closes
// every connection.
func (c *core) close() {
	c.routes.close()
	c.cancel()
	c.wg.Wait()
	_ = c.rc.Close()
}

// refreshLoop re-reads the route of every cached topic each interval.
func (c *core) refreshLoop() {
	defer c.wg.Done()
	t := time.NewTicker(c.opts.routeRefresh)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			for _, topic := range c.routes.topics() {
				c.routes.trigger(topic)
			}
		}
	}
}

// dialError marks an error of opening a connection: nothing was sent.
type dialError struct {
	addr string
	err  error
}

func (e *dialError) Error() string { return fmt.Sprintf("dial %s: %v", e.addr, e.err) }
func (e *dialError) Unwrap() error { return e.err }

// dial is the remoting client's Dial hook: the user's dialer (WithDial) or
// TCP, with errors marked as dial errors, which classifyTransport reads as
// "certainly not sent".
func (c *core) dial(ctx context.Context, addr string) (net.Conn, error) {
	var nc net.Conn
	var err error
	if c.opts.dial != nil {
		nc, err = c.opts.dial(ctx, addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", addr)
	}
	if err != nil {
		return nil, &dialError{addr: addr, err: err}
	}
	if nc == nil {
		return nil, &dialError{addr: addr, err: errors.New("dialer returned no connection")}
	}
	if c.opts.tls != nil {
		// The handshake is part of the dial: a failure sent nothing.
		tc := tls.Client(nc, tlsconf.ForAddr(c.opts.tls, addr))
		if err := tc.HandshakeContext(ctx); err != nil {
			_ = nc.Close()
			return nil, &dialError{addr: addr, err: fmt.Errorf("TLS handshake: %w", err)}
		}
		return tc, nil
	}
	return nc, nil
}

// fetchRoute reads topic's route from the name servers. An unknown topic
// gets the TBW102 route (queue counts capped at 4), as RocketMQ producers
// do, so the first send makes the broker create the topic.
func (c *core) fetchRoute(ctx context.Context, topic string) (*publishInfo, error) {
	rd, err := c.queryRoute(ctx, topic)
	if errors.Is(err, errTopicNotExist) {
		def, derr := c.queryRoute(ctx, protocol.DefaultTopic)
		if derr != nil {
			return nil, fmt.Errorf("%w: topic %s is not on the name servers, and neither is %s to create it from: %w",
				ErrNoRoute, topic, protocol.DefaultTopic, derr)
		}
		return newPublishInfo(topic, def, true), nil
	}
	if err != nil {
		return nil, err
	}
	return newPublishInfo(topic, rd, false), nil
}

// queryRoute asks the name servers, in turn from a rotating start, for
// topic's route, until one answers it or TOPIC_NOT_EXIST.
func (c *core) queryRoute(ctx context.Context, topic string) (*protocol.TopicRouteData, error) {
	ns := c.opts.nameServers
	start := int(c.nsNext.Add(1))
	req := (&protocol.GetRouteInfoRequestHeader{Topic: topic}).Request()
	var errs []error
	for i := range ns {
		addr := ns[(start+i)%len(ns)]
		tctx, cancel := context.WithTimeout(ctx, nameServerTimeout)
		resp, err := c.rc.Invoke(tctx, addr, req)
		cancel()
		switch {
		case err != nil:
			errs = append(errs, err)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("client: route of %s: %w", topic, errors.Join(errs...))
			}
			continue
		case resp.Code == remoting.TopicNotExist:
			return nil, fmt.Errorf("%w: %s (name server %s)", errTopicNotExist, topic, addr)
		case resp.Code != remoting.Success:
			errs = append(errs, &BrokerError{Code: resp.Code, Remark: resp.Remark, Addr: addr})
			continue
		}
		rd, err := protocol.DecodeTopicRouteData(resp.Body)
		if err != nil {
			errs = append(errs, fmt.Errorf("name server %s: %w", addr, err))
			continue
		}
		return rd, nil
	}
	return nil, fmt.Errorf("client: route of %s: %w", topic, errors.Join(errs...))
}

// localIP is the address UNIQ_KEYs carry: the first global unicast IPv4
// address of the host, else 127.0.0.1 (ids stay unique by pid and counter).
func localIP() netip.Addr {
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
					ip = ip.Unmap()
					if ip.Is4() && ip.IsGlobalUnicast() {
						return ip
					}
				}
			}
		}
	}
	return netip.AddrFrom4([4]byte{127, 0, 0, 1})
}
