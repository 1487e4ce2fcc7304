package client

import (
	"errors"
	"strings"

	"github.com/ledgermq/ledgermq/remoting"
)

// codeClass is what an answer's code means to a producer.
type codeClass struct {
	outcome Outcome
	retry   bool       // RocketMQ retries it (on another group when there is one)
	certain bool       // refused before storing because of leadership: retried until the send times out
	status  SendStatus // for stored outcomes
}

// classifyCode reads a send answer, by the one table below. "Retry" is
// RocketMQ's retry set {1, 14, 16, 17} plus SYSTEM_BUSY and the
// not-leader codes, which our raft brokers answer before storing, so a
// retry after a fresh route cannot duplicate them. A code not in the
// table is treated as unknown and not retried: we cannot say what the
// broker did. "Until timeout" marks the answers of a group without a
// writable leader (an election, a leader handing over): the message
// certainly was not stored and waiting cures it, so the send retries,
// with a short back-off, until its timeout, outside the WithRetries
// budget that bounds the other retries.
//
//	code                          outcome  retry          why
//	----------------------------  -------  -------------  ------------------------------------
//	0 SUCCESS                     ok                      stored
//	10 FLUSH_DISK_TIMEOUT         ok                      stored; the flush timed out
//	11 SLAVE_NOT_AVAILABLE        ok                      stored; no replica
//	12 FLUSH_SLAVE_TIMEOUT        ok                      stored; replication timed out
//	1 SYSTEM_ERROR                unknown  yes            our broker: leadership lost or the
//	                                                      proposal timed out in flight, which a
//	                                                      later leader may still commit
//	                                                      (dledger.ErrOutcomeUnknown)
//	2 SYSTEM_BUSY                 failed   yes            proposal queue or worker pool full
//	14 SERVICE_NOT_AVAILABLE      failed   until timeout  not the leader / no leader / not
//	                                                      ready, refused before proposing; but
//	                                                      unknown, retried within the budget,
//	                                                      when the remark shows a follower's
//	                                                      relay to the leader failed or the
//	                                                      node failed applying (relayedUnknown)
//	16 NO_PERMISSION              failed   yes            topic not writable (a stale route)
//	17 TOPIC_NOT_EXIST            failed   yes            not auto-creatable (yet)
//	501 NOT_LEADER_FOR_QUEUE      failed   until timeout  not the leader
//	1500 GO_AWAY                  failed   until timeout  the broker is shutting down, not served
//	13 MESSAGE_ILLEGAL            failed   no             checked before storing
//	29 INVALID_PARAMETER          failed   no             checked before storing
//	3 REQUEST_CODE_NOT_SUPPORTED  failed   no
//	15 VERSION_NOT_SUPPORTED      failed   no
//	215 FLOW_CONTROL              failed   no
//	anything else                 unknown  no
func classifyCode(code int32, remark string) codeClass {
	switch code {
	case remoting.Success:
		return codeClass{outcome: OutcomeOK, status: SendOK}
	case remoting.FlushDiskTimeout:
		return codeClass{outcome: OutcomeOK, status: SendFlushDiskTimeout}
	case remoting.SlaveNotAvailable:
		return codeClass{outcome: OutcomeOK, status: SendSlaveNotAvailable}
	case remoting.FlushSlaveTimeout:
		return codeClass{outcome: OutcomeOK, status: SendFlushSlaveTimeout}
	case remoting.SystemError:
		return codeClass{outcome: OutcomeUnknown, retry: true}
	case remoting.ServiceNotAvailable:
		if relayedUnknown(remark) {
			return codeClass{outcome: OutcomeUnknown, retry: true}
		}
		return codeClass{outcome: OutcomeFailed, retry: true, certain: true}
	case remoting.NotLeaderForQueue, remoting.GoAway:
		return codeClass{outcome: OutcomeFailed, retry: true, certain: true}
	case remoting.SystemBusy, remoting.NoPermission, remoting.TopicNotExist:
		return codeClass{outcome: OutcomeFailed, retry: true}
	case remoting.MessageIllegal, remoting.InvalidParameter, remoting.RequestCodeNotSupported,
		remoting.VersionNotSupported, remoting.FlowControl:
		return codeClass{outcome: OutcomeFailed}
	}
	return codeClass{outcome: OutcomeUnknown}
}

// relayedUnknown recognises the SERVICE_NOT_AVAILABLE answers of our
// broker that do not mean "refused before storing" (broker/send.go and
// broker/codes.go): a follower relays a send to its leader and answers 14
// when the relay fails, which after the relay was written leaves the
// outcome open; and a node whose store failed applying a committed entry
// answers 14 with dledger's "node failed" although the entry is committed.
// A relay that could not even connect is still a clean refusal. This
// reads remarks because no code says it; the broker should answer
// SYSTEM_ERROR for these instead, and then this goes.
func relayedUnknown(remark string) bool {
	if strings.Contains(remark, "forwarding to leader") {
		return !strings.Contains(remark, "remoting: connect to")
	}
	return strings.Contains(remark, "dledger: node failed")
}

// classifyTransport reads an error of the remoting client: what it says
// about the store, whether RocketMQ would retry it, and whether it is a
// transport failure (no answer from the broker). A failed dial is retried
// until the send times out, as SERVICE_NOT_AVAILABLE is (a leader killed
// refuses connections until the route names its successor); the others
// count against the WithRetries budget.
//
//	error                                  outcome  retry          transport
//	-------------------------------------  -------  -------------  ---------
//	dial failed (our dial wrapper's mark)  failed   until timeout  yes
//	remoting.ErrFrameTooLarge              failed   no             no
//	remoting.ErrConnClosed (lost after     unknown  yes            yes
//	  the request was queued)
//	remoting.ErrClosed (client closed      failed   no             no
//	  before sending)
//	timeout, cancellation                  unknown  yes            yes
//	anything else                          unknown  yes            yes
//
// Conservative cases: a connection found dead just before the request was
// queued, and a context that ends while dialling, are reported unknown
// although nothing was sent (remoting does not tell them apart).
func classifyTransport(err error) (outcome Outcome, retry, transport, certain bool) {
	var de *dialError
	switch {
	case errors.As(err, &de):
		return OutcomeFailed, true, true, true
	case errors.Is(err, remoting.ErrFrameTooLarge):
		return OutcomeFailed, false, false, false
	case errors.Is(err, remoting.ErrConnClosed):
		return OutcomeUnknown, true, true, false
	case errors.Is(err, remoting.ErrClosed):
		return OutcomeFailed, false, false, false
	}
	// Timeouts, cancellations and anything else: the request may have
	// been written.
	return OutcomeUnknown, true, true, false
}
