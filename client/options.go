package client

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/internal/tlsconf"
	"github.com/ledgermq/ledgermq/remoting"
)

// Defaults, as RocketMQ's producer has them unless noted.
const (
	DefaultGroup                = "DEFAULT_PRODUCER"
	DefaultRetries              = 2
	DefaultSendTimeout          = 3 * time.Second
	DefaultRouteRefreshInterval = 30 * time.Second
	// DefaultCompressThreshold: bodies of this many bytes or more are
	// zlib-compressed (compressMsgBodyOverHowmuch).
	DefaultCompressThreshold = 4 << 10
	DefaultCompressLevel     = 5
	// DefaultMaxMessageSize is the largest body (or batch body) a send
	// accepts before it goes on the wire (Java's maxMessageSize).
	DefaultMaxMessageSize = 4 << 20
	// DefaultMaxAsyncInFlight bounds the SendAsync calls in progress
	// (Java's backPressureForAsyncSendNum); further calls wait.
	DefaultMaxAsyncInFlight = 10000
	// nameServerTimeout bounds one GET_ROUTEINFO_BY_TOPIC call.
	nameServerTimeout = 3 * time.Second
)

// Option configures a Producer, a PullConsumer or a PushConsumer. Options
// that do not concern a client are ignored by it (WithRetries by
// consumers, WithConsumeFromWhere by producers, …).
type Option func(*options)

type options struct {
	nameServers       []string
	group             string
	retries           int
	sendTimeout       time.Duration
	routeRefresh      time.Duration
	selector          QueueSelector
	compressThreshold int
	compressLevel     int
	maxMessageSize    int
	latencyFault      bool
	retryUnknown      bool
	maxAsync          int
	logger            hclog.Logger
	dial              func(ctx context.Context, addr string) (net.Conn, error)
	tls               *tls.Config
	tlsFiles          tlsconf.Files
	now               func() time.Time
	creds             auth.Credentials
	// traceTopic, when set, is where the client writes message traces
	// (WithTrace, trace.go).
	traceTopic string

	// Consumers only (consumer_options.go).
	consumer consumerOptions
	// onRequest serves requests brokers send to the client
	// (NOTIFY_CONSUMER_IDS_CHANGED); set by the consumers, nil for
	// producers.
	onRequest remoting.Handler
}

func defaultOptions() options {
	return options{
		group:             DefaultGroup,
		retries:           DefaultRetries,
		sendTimeout:       DefaultSendTimeout,
		routeRefresh:      DefaultRouteRefreshInterval,
		compressThreshold: DefaultCompressThreshold,
		compressLevel:     DefaultCompressLevel,
		maxMessageSize:    DefaultMaxMessageSize,
		latencyFault:      true,
		retryUnknown:      true,
		maxAsync:          DefaultMaxAsyncInFlight,
		logger:            hclog.NewNullLogger(),
		now:               time.Now,
		consumer:          defaultConsumerOptions(),
	}
}

// WithNameServers sets the name servers ("host:port"), which the client
// asks in turn for routes. Required.
func WithNameServers(addrs ...string) Option {
	return func(o *options) { o.nameServers = append([]string(nil), addrs...) }
}

// WithGroup sets the producer group (default DEFAULT_PRODUCER) or the
// consumer group (default DEFAULT_CONSUMER).
func WithGroup(group string) Option { return func(o *options) { o.group = group } }

// WithRetries sets how many times a failed synchronous, asynchronous or
// batch send is tried again (default 2, so 3 attempts in all). Every retry
// re-reads the route first. Refusals that mean the group had no writable
// leader there (a failed dial, SERVICE_NOT_AVAILABLE, NOT_LEADER, GO_AWAY:
// certainly not stored) do not count: they are retried until the send
// times out, so a send rides out an election. 0 turns every retry off.
// One-way sends retry only when the request could not be written.
func WithRetries(n int) Option { return func(o *options) { o.retries = n } }

// WithSendTimeout bounds each send, all of its attempts and route
// look-ups together (default 3 s). The caller's context bounds it too.
func WithSendTimeout(d time.Duration) Option { return func(o *options) { o.sendTimeout = d } }

// WithRouteRefreshInterval sets the period of the background refresh of
// every route in use (default 30 s, as RocketMQ's pollNameServerInterval).
// A failed send refreshes its topic's route at once whatever this is.
func WithRouteRefreshInterval(d time.Duration) Option {
	return func(o *options) { o.routeRefresh = d }
}

// WithQueueSelector makes s choose the queue of every message, for
// ordered sends: no latency fault tolerance, and every retry asks s again
// (with a stable route, the same queue). Without it, a message with a
// ShardingKey goes to HashSelector's queue and the others round-robin.
func WithQueueSelector(s QueueSelector) Option { return func(o *options) { o.selector = s } }

// WithCompression sets the body size from which bodies are
// zlib-compressed, and the zlib level (defaults 4096 and 5, as RocketMQ).
// A threshold <= 0 turns compression off. Batches are never compressed.
func WithCompression(threshold, level int) Option {
	return func(o *options) { o.compressThreshold, o.compressLevel = threshold, level }
}

// WithMaxMessageSize sets the largest body (or batch body, after
// compression) a send accepts (default 4 MiB).
func WithMaxMessageSize(n int) Option { return func(o *options) { o.maxMessageSize = n } }

// WithLatencyFaultTolerance turns RocketMQ's MQFaultStrategy on or off
// (default on): a broker group whose last send was slow or failed is
// avoided for a while when another group can take the message.
func WithLatencyFaultTolerance(on bool) Option { return func(o *options) { o.latencyFault = on } }

// WithRetryAfterUnknown says whether a send is retried after an attempt
// whose outcome is unknown (a timeout, a connection lost after the
// request was written, SYSTEM_ERROR). Default true, as RocketMQ; such a
// retry may store the message twice, which SendResult.MaybeDuplicated
// reports (unless the broker group's duplicate window covered it). With
// false the send stops there with ErrUnknownOutcome.
func WithRetryAfterUnknown(on bool) Option { return func(o *options) { o.retryUnknown = on } }

// WithMaxAsyncInFlight bounds the SendAsync calls in progress (default
// 10000); SendAsync waits for a slot, or for its context.
func WithMaxAsyncInFlight(n int) Option { return func(o *options) { o.maxAsync = n } }

// WithLogger sets the logger (default: none).
func WithLogger(l hclog.Logger) Option { return func(o *options) { o.logger = l } }

// WithDial makes dial open every connection the client opens, to name
// servers and brokers alike (see remoting.ClientConfig.Dial), so tests and
// the chaos harness can put faults on the client's links.
func WithDial(dial func(ctx context.Context, addr string) (net.Conn, error)) Option {
	return func(o *options) { o.dial = dial }
}

// WithTLS runs every connection, to name servers and brokers, over TLS
// with cfg (nil: plaintext, the default). The server name checked is the
// dialled host unless cfg sets ServerName. A failed handshake counts as a
// failed dial: nothing was sent.
func WithTLS(cfg *tls.Config) Option { return func(o *options) { o.tls = cfg } }

// WithTLSFiles is WithTLS with a config read from PEM files: servers are
// verified against caFile; certFile and keyFile (both or neither) are
// presented when a server asks. The files are re-read when they change.
func WithTLSFiles(caFile, certFile, keyFile string) Option {
	return func(o *options) {
		o.tlsFiles = tlsconf.Files{CAFile: caFile, CertFile: certFile, KeyFile: keyFile}
	}
}

// loadTLS turns TLS files into the config (WithTLS wins over files).
func loadTLS(cfg *tls.Config, f tlsconf.Files) (*tls.Config, error) {
	if cfg != nil || !f.Enabled() {
		return cfg, nil
	}
	src, err := tlsconf.Load(f)
	if err != nil {
		return nil, fmt.Errorf("%w: TLS: %w", ErrConfig, err)
	}
	return src.ClientConfig(), nil
}

// withClock replaces the clock of the latency fault tolerance (tests).
func withClock(now func() time.Time) Option { return func(o *options) { o.now = now } }

// validate checks the options after they are applied.
func (o *options) validate() error {
	if len(o.nameServers) == 0 {
		return fmt.Errorf("%w: no name server (WithNameServers)", ErrConfig)
	}
	for _, a := range o.nameServers {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return fmt.Errorf("%w: name server %q: %v", ErrConfig, a, err)
		}
	}
	switch {
	case o.group == "":
		return fmt.Errorf("%w: empty producer group", ErrConfig)
	case o.retries < 0:
		return fmt.Errorf("%w: retries %d < 0", ErrConfig, o.retries)
	case o.sendTimeout <= 0:
		return fmt.Errorf("%w: send timeout %v <= 0", ErrConfig, o.sendTimeout)
	case o.routeRefresh <= 0:
		return fmt.Errorf("%w: route refresh interval %v <= 0", ErrConfig, o.routeRefresh)
	case o.compressThreshold > 0 && (o.compressLevel < -2 || o.compressLevel > 9):
		return fmt.Errorf("%w: zlib level %d outside [-2, 9]", ErrConfig, o.compressLevel)
	case o.maxMessageSize <= 0:
		return fmt.Errorf("%w: max message size %d <= 0", ErrConfig, o.maxMessageSize)
	case o.maxAsync <= 0:
		return fmt.Errorf("%w: max async in flight %d <= 0", ErrConfig, o.maxAsync)
	case o.logger == nil:
		o.logger = hclog.NewNullLogger()
	}
	var err error
	o.tls, err = loadTLS(o.tls, o.tlsFiles)
	return err
}
