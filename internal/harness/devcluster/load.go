package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ledgermq/ledgermq/message"
	"github.com/ledgermq/ledgermq/protocol"
	"github.com/ledgermq/ledgermq/remoting"
)

// Outcome is what a producer can know about a send.
type Outcome uint8

// The outcomes. The zero Outcome means nothing was sent.
const (
	// Acked: the broker answered SUCCESS; the message is stored at the
	// commitlog offset of the offset msgId it returned.
	Acked Outcome = iota + 1
	// Failed: certainly not stored by this attempt: the connection was
	// refused before the request was written, or the broker answered a
	// code that says it did not store it (see definiteFailure).
	Failed
	// Unknown: the request may have reached the broker and nothing says
	// what became of it: a timeout (the node may be stopped, not dead), a
	// connection broken after the write, or SYSTEM_ERROR, which the broker
	// answers when leadership was lost with the proposal in flight.
	Unknown
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Acked:
		return "acked"
	case Failed:
		return "failed"
	case Unknown:
		return "unknown"
	}
	return "none"
}

// definiteFailure lists the send answers after which the broker has not
// stored the message: refused before a proposal (busy, no leader, not
// writable, invalid). SYSTEM_ERROR is not here: the broker uses it for an
// outcome it does not know (dledger.ErrOutcomeUnknown). One caveat the
// checks allow for: a follower whose forward to the leader timed out also
// answers SERVICE_NOT_AVAILABLE, and the leader may have stored the
// message meanwhile, so a failed message found stored is counted, not
// taken for a defect.
var definiteFailure = map[int32]bool{
	remoting.SystemBusy:          true,
	remoting.ServiceNotAvailable: true,
	remoting.MessageIllegal:      true,
	remoting.NoPermission:        true,
	remoting.TopicNotExist:       true,
	remoting.InvalidParameter:    true,
}

// Attempt is one try at sending a message.
type Attempt struct {
	Outcome Outcome
	Addr    string // the node it went to
	Code    int32  // the response code; -1 without a response
	Detail  string // the transport error or the response's remark
	At      time.Time
}

// Send is one message of a Load: unique key and body, and every attempt
// made to send it (a producer retries a message that was not acked, as
// RocketMQ producers do). Every attempt carries the same UNIQ_KEY, as a
// RocketMQ producer's retries do, so the group's duplicate window stores
// a retried message once.
type Send struct {
	Key      string
	Uniq     string // the UNIQ_KEY property of every attempt
	Body     []byte
	Attempts []Attempt
	// MsgID is the offset msgId of the acknowledged attempt and Offset its
	// commitlog offset (-1 when not acked or the msgId does not parse).
	MsgID  string
	Offset int64
}

// Outcome is Acked if an attempt was acked, else Unknown if any attempt's
// outcome is unknown, else Failed (or zero when nothing was attempted).
func (s *Send) Outcome() Outcome {
	var o Outcome
	for _, a := range s.Attempts {
		switch {
		case a.Outcome == Acked:
			return Acked
		case a.Outcome == Unknown:
			o = Unknown
		case o == 0:
			o = Failed
		}
	}
	return o
}

// Retried reports whether the message was sent more than once, after an
// attempt that was not acked.
func (s *Send) Retried() bool { return len(s.Attempts) > 1 }

// LoadConfig configures a Load. Zero values take the defaults.
type LoadConfig struct {
	// Namesrv is the name server the producers learn the leader from.
	Namesrv string
	// Group is the broker group (default GroupName); Topic the topic
	// (auto-created from TBW102 with Queues queues on the first send).
	Group, Topic string
	// Producers is the number of concurrent producers (default 4).
	Producers int
	// Messages bounds the messages sent in all (default 100000) and
	// Duration the time the load runs (default 10 min): it stops by itself.
	Messages int
	Duration time.Duration
	// Interval paces each producer: at most one new message per Interval
	// (default 20 ms).
	Interval time.Duration
	// Attempts bounds the tries per message (default 3, RocketMQ's one
	// send plus retryTimesWhenSendFailed=2); SendTimeout bounds each try
	// (default 3 s).
	Attempts    int
	SendTimeout time.Duration
	// Queues is the number of queues the producers spread over by queueId
	// (default 4, the dev template's defaultTopicQueueNums).
	Queues int
	// Prefix starts every key and body (default "load").
	Prefix string
}

func (c *LoadConfig) fill() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&c.Producers, 4)
	def(&c.Messages, 100000)
	def(&c.Attempts, 3)
	def(&c.Queues, 4)
	defDur(&c.Duration, 10*time.Minute)
	defDur(&c.Interval, 20*time.Millisecond)
	defDur(&c.SendTimeout, 3*time.Second)
	if c.Group == "" {
		c.Group = GroupName
	}
	if c.Topic == "" {
		c.Topic = "LoadTopic"
	}
	if c.Prefix == "" {
		c.Prefix = "load"
	}
}

// retryPause paces a producer between a failed attempt and the next, and
// between name server lookups while no leader is known.
const retryPause = 100 * time.Millisecond

// Load is a running set of producers sending single messages with
// SEND_MESSAGE to the group's leader as the name server lists it. On a
// failure or a non-success answer a producer asks the name server again
// and retries (a follower forwards a send to the leader, so a stale
// answer still works while that node lives). Every attempt is classified
// (Outcome) and kept for the checks after the load.
//
// Goroutines: one per producer, owned by the Load and waited for by Stop;
// Probe runs on its caller's goroutine.
type Load struct {
	cfg   LoadConfig
	ids   *message.UniqIDGenerator // each send's UNIQ_KEY, as a RocketMQ client makes them
	stop  chan struct{}
	done  chan struct{}
	wg    sync.WaitGroup
	acked atomic.Int64
	// per is each producer's sends, written only by that producer until
	// wg is done.
	per [][]Send

	stopOnce sync.Once
	result   LoadResult

	probeMu     sync.Mutex
	probes      []Send
	probeClient *remoting.Client
}

// StartLoad starts cfg.Producers producers.
func StartLoad(cfg LoadConfig) *Load {
	cfg.fill()
	l := &Load{cfg: cfg, ids: message.NewUniqIDGenerator(netip.AddrFrom4([4]byte{127, 0, 0, 1}), os.Getpid(), nil), stop: make(chan struct{}), done: make(chan struct{}),
		per: make([][]Send, cfg.Producers), probeClient: remoting.NewClient(remoting.ClientConfig{})}
	deadline := time.Now().Add(cfg.Duration)
	each := (cfg.Messages + cfg.Producers - 1) / cfg.Producers
	for p := range cfg.Producers {
		l.wg.Add(1)
		go l.produce(p, each, deadline)
	}
	go func() {
		l.wg.Wait()
		close(l.done)
	}()
	return l
}

// Acked returns how many sends have been acknowledged so far.
func (l *Load) Acked() int64 { return l.acked.Load() }

// Done is closed once every producer has ended, by Stop or by reaching
// the message or time bound.
func (l *Load) Done() <-chan struct{} { return l.done }

// produce is producer p's loop: up to n messages until deadline or Stop.
func (l *Load) produce(p, n int, deadline time.Time) {
	defer l.wg.Done()
	c := remoting.NewClient(remoting.ClientConfig{})
	defer c.Close()
	pace := time.NewTicker(l.cfg.Interval)
	defer pace.Stop()
	addr := ""
	for i := range n {
		select {
		case <-l.stop:
			return
		case <-pace.C:
		}
		if time.Now().After(deadline) {
			return
		}
		key := fmt.Sprintf("%s-p%d-%07d", l.cfg.Prefix, p, i)
		s := Send{Key: key, Uniq: l.ids.Next(), Body: loadBody(key, i), Offset: -1}
		for a := 0; a < l.cfg.Attempts; a++ {
			if a > 0 && !l.pause() {
				break
			}
			if addr == "" {
				if addr = l.leader(c, deadline); addr == "" {
					break // stopping or out of time
				}
			}
			at := l.attempt(c, addr, int32(i%l.cfg.Queues), &s)
			if at.Outcome == Acked {
				break
			}
			addr = "" // ask the name server again
		}
		if len(s.Attempts) > 0 {
			l.per[p] = append(l.per[p], s)
		}
		if time.Now().After(deadline) {
			return
		}
	}
}

// pause waits retryPause; false when the load is stopping.
func (l *Load) pause() bool {
	t := time.NewTimer(retryPause)
	defer t.Stop()
	select {
	case <-l.stop:
		return false
	case <-t.C:
		return true
	}
}

// leader resolves the leader, asking again every retryPause while the
// name server lists none; "" once the load stops or deadline passes.
func (l *Load) leader(c *remoting.Client, deadline time.Time) string {
	for time.Now().Before(deadline) {
		if addr := l.resolve(c); addr != "" {
			return addr
		}
		if !l.pause() {
			return ""
		}
	}
	return ""
}

// resolve asks the name server for the leader; "" when it lists none or
// does not answer.
func (l *Load) resolve(c *remoting.Client) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	addr, err := Leader(ctx, c, l.cfg.Namesrv, l.cfg.Group)
	if err != nil {
		return ""
	}
	return addr
}

// attempt sends s once to addr and records the attempt in s. The call is
// not cancelled by Stop: an attempt ends by its answer or its timeout, so
// stopping the load adds no unknown outcomes.
func (l *Load) attempt(c *remoting.Client, addr string, queueID int32, s *Send) Attempt {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.SendTimeout)
	defer cancel()
	a := Attempt{Addr: addr, Code: -1, At: time.Now()}
	resp, err := c.Invoke(ctx, addr, SendRequest(l.cfg.Group, l.cfg.Topic, queueID, s.Key, s.Uniq, s.Body))
	switch {
	case err != nil && errors.Is(err, syscall.ECONNREFUSED):
		// The dial was refused: nothing was written.
		a.Outcome, a.Detail = Failed, err.Error()
	case err != nil:
		a.Outcome, a.Detail = Unknown, err.Error()
	case resp.Code == remoting.Success:
		a.Outcome, a.Code = Acked, resp.Code
		var h protocol.SendMessageResponseHeader
		if herr := h.Decode(resp.ExtFields); herr != nil {
			a.Detail = herr.Error() // acked all the same: the code says stored
		} else if _, off, perr := message.ParseOffsetMsgID(h.MsgID); perr == nil {
			s.MsgID, s.Offset = h.MsgID, off
		} else {
			s.MsgID, a.Detail = h.MsgID, fmt.Sprintf("msgId %q: %v", h.MsgID, perr)
		}
		l.acked.Add(1)
	case definiteFailure[resp.Code]:
		a.Outcome, a.Code, a.Detail = Failed, resp.Code, resp.Remark
	default:
		a.Outcome, a.Code, a.Detail = Unknown, resp.Code, resp.Remark
	}
	s.Attempts = append(s.Attempts, a)
	return a
}

// Probe sends one message of its own (key prefix "probe") to the leader
// the name server lists, once, and reports whether it was acknowledged.
// It is how a caller asks "does the group take writes again?"; the
// message is kept with the load's sends, so the checks after the load
// account for it like any other. It records nothing when no leader is
// listed or the load has stopped.
func (l *Load) Probe() bool {
	l.probeMu.Lock()
	defer l.probeMu.Unlock()
	select {
	case <-l.stop:
		return false
	default:
	}
	addr := l.resolve(l.probeClient)
	if addr == "" {
		return false
	}
	i := len(l.probes)
	key := fmt.Sprintf("%s-probe-%07d", l.cfg.Prefix, i)
	s := Send{Key: key, Uniq: l.ids.Next(), Body: loadBody(key, i), Offset: -1}
	a := l.attempt(l.probeClient, addr, int32(i%l.cfg.Queues), &s)
	l.probes = append(l.probes, s)
	return a.Outcome == Acked
}

// LoadResult is every send of a stopped Load and the counts by outcome.
type LoadResult struct {
	Sends []Send
	// Acked, Failed and Unknown count the messages by Send.Outcome.
	Acked, Failed, Unknown int
	// Attempts counts every try, AttemptsFailed and AttemptsUnknown the
	// tries with those outcomes (a message acked at its second try has
	// one of them), RetriedAcked the messages acked after a retry.
	Attempts, AttemptsFailed, AttemptsUnknown, RetriedAcked int
	// Codes counts the response codes of the tries that had a response;
	// TransportErrs the tries without one, Refusals those of them whose
	// dial was refused.
	Codes                   map[int32]int
	TransportErrs, Refusals int
}

// Stop stops the producers, waits for them (at most one SendTimeout plus
// a retry pause) and returns every send. Later calls return the same.
func (l *Load) Stop() LoadResult {
	l.stopOnce.Do(func() {
		close(l.stop)
		<-l.done
		l.probeMu.Lock()
		defer l.probeMu.Unlock()
		l.probeClient.Close()
		r := LoadResult{Codes: map[int32]int{}}
		for _, ps := range append(l.per, l.probes) {
			for _, s := range ps {
				r.Sends = append(r.Sends, s)
				switch s.Outcome() {
				case Acked:
					r.Acked++
					if s.Retried() {
						r.RetriedAcked++
					}
				case Failed:
					r.Failed++
				case Unknown:
					r.Unknown++
				}
				for _, a := range s.Attempts {
					r.Attempts++
					switch a.Outcome {
					case Failed:
						r.AttemptsFailed++
					case Unknown:
						r.AttemptsUnknown++
					}
					switch {
					case a.Code >= 0:
						r.Codes[a.Code]++
					case a.Outcome == Failed:
						r.Refusals++
						r.TransportErrs++
					default:
						r.TransportErrs++
					}
				}
			}
		}
		l.result = r
	})
	return l.result
}

// loadBody is a message body: the key (so every body is unique) padded to
// a length between 64 and 319 bytes that varies with i, so records are
// not all the same size.
func loadBody(key string, i int) []byte {
	b := make([]byte, 0, 320)
	b = append(b, key...)
	b = append(b, ' ')
	for len(b) < 64+(i*37)%256 {
		b = append(b, byte('a'+len(b)%26))
	}
	return b
}

// SendRequest is a SEND_MESSAGE (10) request of one message with KEYS key
// and UNIQ_KEY uniq to queue queueID of topic in group, as a RocketMQ
// producer builds it (the topic auto-created from TBW102 with 4 queues).
func SendRequest(group, topic string, queueID int32, key, uniq string, body []byte) *remoting.Command {
	props := map[string]string{message.PropertyKeys: key, message.PropertyUniqKey: uniq}
	h := protocol.SendMessageRequestHeader{ProducerGroup: "devcluster-load", Topic: topic, DefaultTopic: protocol.DefaultTopic,
		DefaultTopicQueueNums: 4, QueueID: queueID, BornTimestamp: time.Now().UnixMilli(),
		Properties: string(message.EncodeProperties(props)), BrokerName: group}
	return h.Request(body)
}

// KeyOf returns the KEYS property of a stored message ("" if none).
func KeyOf(m *message.Ext) string { return strings.TrimSpace(m.Properties[message.PropertyKeys]) }
