// Package remoting is RocketMQ's "remoting" wire protocol: the frame codec
// (RemotingCommand with JSON or ROCKETMQ binary headers), a TCP server that
// dispatches requests by code to bounded worker pools, and a client that
// multiplexes calls over one connection per address. The name server and
// the broker are built on it, and the unchanged
// github.com/apache/rocketmq-client-go/v2 speaks it to them.
//
// # Frame
//
// One TCP stream carries many frames in both directions. Integers are
// big-endian.
//
//	offset  size  field
//	------  ----  --------------------------------------------------------
//	0       4     length      int32: bytes after this field = 4 + H + B
//	4       1     type        0 = JSON header, 1 = ROCKETMQ binary header
//	5       3     H           uint24 header length
//	8       H     header      JSON text or binary header (below)
//	8+H     B     body        opaque bytes (messages, JSON admin bodies)
//
// A frame, length field included, may not exceed MaxFrameSize (16 MiB by
// default, Java's frameMaxLength). The length is checked before anything
// is allocated. On a server the frame is then counted against the read
// budget (see Limits) before its buffer is allocated, a frame above
// SmallFrameSize (64 KiB) in two steps: its header, then, once the header
// is decoded, its body; elsewhere (a Client, ReadFrame) a large frame's
// buffer grows only as its bytes arrive.
//
// # JSON header (type 0)
//
//	key        JSON type            Command field  notes
//	---------  -------------------  -------------  ----------------------------
//	code       number (int32)       Code           request or response code
//	language   string               Language       "JAVA", "GO", …
//	version    number (int16)       Version        sender's version ordinal
//	opaque     number (int32)       Opaque         request id, echoed by the response
//	flag       number (int32)       Flag           bit 0 response, bit 1 one-way
//	remark     string               Remark         error text; may be absent or null
//	extFields  object string→string ExtFields      custom header; may be absent or null
//
// Decoding accepts what the Go client's decoder accepts: keys in any case
// (Unicode case folding, as encoding/json), unknown keys of any type
// (Java's "serializeTypeCurrentRPC"), null for any field (it stays unset;
// a null ext value reads as ""), numbers for the int fields when they are
// integers in range, and, as RocketMQ's fastjson reads them, strings that
// hold such integers for the int fields and ext values of any JSON type,
// taken as their text ("queueId":3 reads as "3", true as "true", an object
// or array as its JSON). It rejects with ErrBadHeader anything that is not
// one JSON object, a code outside int32 or a version outside int16, and any other field of
// the wrong JSON type. Invalid UTF-8 and lone surrogate escapes in strings
// decode as U+FFFD.
//
// Encoding writes the keys in the order above, leaves out an empty remark,
// always writes extFields (sorted by key, every value a JSON string) and
// escapes control characters, so the properties separators \x01 and \x02
// travel as \u0001 and \u0002.
//
// # ROCKETMQ binary header (type 1)
//
//	size  field
//	----  ---------------------------------------------------------------
//	2     code      int16 (Command.Code, sign-extended)
//	1     language  byte code (table below)
//	2     version   int16
//	4     opaque    int32
//	4     flag      int32
//	4     R         int32 remark length, then R bytes of remark
//	4     E         int32 ext length, then E bytes of entries:
//	                  2 key length int16, key, 4 value length int32, value
//
// Java's RemotingCommand code is an int, but RocketMQSerializable writes
// only its low 16 bits here (and reads them back as a short), so a code
// above int16 — the POP codes, 200050 and up — survives only a JSON
// header: POP_MESSAGE in a binary header arrives as 3442. Decoding reads
// the short as Java does; Encode refuses a code outside int16 in a binary
// header with ErrBadHeader rather than send a different code.
//
// The fixed part is 21 bytes, so H = 21 + R + E. Decoding checks every
// length against the bytes that remain: negative lengths, lengths past the
// header, and bytes left over after the last entry are ErrBadHeader.
//
//	language  code    language  code    language  code
//	--------  ----    --------  ----    --------  ----
//	JAVA      0       ERLANG    5       PHP       10
//	CPP       1       RUBY      6       OMS       11
//	DOTNET    2       OTHER     7       RUST      12
//	PYTHON    3       HTTP      8       NODE_JS   13
//	DELPHI    4       GO        9
//
// A byte outside the table decodes as OTHER, and a name outside it encodes
// as OTHER's code.
//
// # Requests, responses, one-way calls
//
// A frame without FlagResponse is a request, whichever side sends it; a
// response echoes the request's opaque on the same connection. The Go
// client never sets FlagOneway (its "one-way" calls go out with flag 0 and
// it drops the answer), so handlers must never depend on the bit; it only
// suppresses the response. A server answers in the header form of the
// request (JSON to JSON, binary to binary), as Java's broker does since
// RocketMQ 4.7 (its response callback copies the request's
// serializeTypeCurrentRPC); every client reads either by the type byte. A
// response the binary form cannot carry (a code outside int16, an ext key
// over 32 767 bytes) goes as JSON instead of with a different code.
//
// Codes live in codes.go: one table of response codes (Success,
// SystemBusy, TopicNotExist, …) and the request codes the product uses,
// numbered as Java's RequestCode and ResponseCode.
//
// # Goroutines: who calls what
//
// Server: Start runs one accept goroutine and the stall watcher (Limits:
// it closes connections silent inside a frame while readers wait for the
// budget). Each accepted connection gets a
// read goroutine that decodes frames and
//
//   - hands a response to the Conn.Request call waiting for its opaque
//     (late or unknown responses are dropped);
//   - queues a request on the pool registered for its code, or answers at
//     once with RequestCodeNotSupported (no handler; remark "request type
//     N not supported") or SystemBusy (queue full, or the connection has
//     MaxInFlightPerConn requests in flight; remark
//     "[TOO_MANY_REQUESTS]…"), so a flood on one pool never holds up
//     another;
//   - on a frame it cannot decode (bad length, bad type byte, bad header),
//     logs the peer and closes the connection: the stream is no longer
//     synchronised.
//
// Pool workers run Handler.Serve and write its response. A handler may
// return nil and answer later with Conn.WriteCommand (long polling); may
// call back into the peer with Conn.Request or Conn.Oneway (for example
// CHECK_TRANSACTION_STATE); and may block, which only occupies its own
// pool. A handler panic is recovered, logged and answered with
// SystemError. Handlers receive the connection's context, cancelled when
// the connection closes. An AsyncHandler returns its worker at once and
// answers through its Reply, exactly once, from any goroutine (the
// broker's sends: the goroutine that answers raft entries replies to the
// sends each entry carried); the request stays counted in flight (and
// its read budget held) until then, and the answer is queued without a
// write on the replying goroutine: a flusher goroutine of the
// connection's writes it (Conn.replyDetached).
//
// # Limits: what peers can make a server hold
//
//	limit               default   beyond it
//	------------------  --------  ----------------------------------------------
//	ReadBudget          256 MiB   readers wait before reading the next frame
//	ReadReserve         budget/8  large frames wait; small ones still read
//	MaxConnShare        large/4   the connection's next large body waits for
//	                              its own requests to finish
//	LargeBodyCodes      all       a body above 64 KiB of another code: answered
//	                              SYSTEM_ERROR, body discarded unread
//	FrameTimeout +      10 s +    the frame has not arrived: ErrStalled, the
//	  length/MinReadRate 512 KiB/s connection is closed
//	StallGrace          2 s       silent inside a frame while readers wait:
//	                              ErrStalled, the connection is closed
//	StarvedAfter        5 s       small frames waiting that long without a
//	                              break: ReadHealth reports it (/readyz)
//	MaxConns            4096      a new connection is closed at accept (logged
//	                              at most once per LogEvery, with a count)
//	MaxInFlightPerConn  1024      the request is answered SystemBusy
//	Header.MaxBytes     1 MiB     ErrBadHeader: the connection is closed
//	Header.MaxExtFields 1024      ErrBadHeader: the connection is closed
//	Header.MaxDepth     32        ErrBadHeader: the connection is closed
//
// The read budget is server-wide and counts request bytes read but not yet
// handled: a frame is counted at its announced length from the moment its
// length prefix has arrived, before its buffer is allocated, until its
// handler returns (or its answer is decided without one: no handler, a
// limit, a full queue; or it fails to arrive). So a peer that announces
// 16 MiB and sends 12 MiB holds 16 MiB of the budget, and frames queued
// behind a slow pool hold theirs: the sum never exceeds the budget, and a
// connection that would exceed it waits (TCP back-pressure) instead of
// queueing without limit. A frame whose bytes are granted always
// completes or fails, so waiting never deadlocks.
//
// Bounded memory is not enough: 32 connections each stalled inside a
// 16 MiB frame used to hold a name server's whole 64 MiB budget, and
// every other request waited for as long as they stayed open. So the
// budget is shared out:
//
//   - Two classes. A small frame (at most SmallFrameSize, length prefix
//     included: every request header with a small body) is admitted whole
//     and may use the whole budget. A large frame is admitted header first
//     (its header-type word read, then its header admitted, read and
//     decoded), then its body, as a large grant: large grants never take
//     the last ReadReserve bytes, so ordinary requests are read whatever
//     large frames hold. Small waiters are served before large ones, each
//     class in arrival order.
//   - Header first. A request whose code is not in
//     ServerConfig.LargeBodyCodes (or, with LargeBodyField, whose header
//     lacks that field: an unsigned request where requests must be
//     signed) is answered SYSTEM_ERROR as soon as its header is decoded,
//     and its body is discarded as it arrives, holding nothing. Responses
//     (to the server's own calls) are never refused this way.
//   - A share per connection. A connection holding MaxConnShare bytes
//     (its frame being read plus its requests queued and handled) waits
//     for its own requests before its next large body; others pass it.
//   - Deadlines. From its length prefix on, a frame must arrive within
//     FrameTimeout plus its length at MinReadRate (at most IdleTimeout;
//     time spent waiting for the budget does not count), or its
//     connection is closed (ErrStalled).
//   - The silent go first. While readers wait for the budget, the stall
//     watcher (one goroutine per Server, every StallGrace/4, at most
//     250 ms) closes the connections whose frame holds budget and has
//     received nothing for StallGrace, the longest silent first, until
//     what they hold covers what the waiters need (ErrStalled).
//
// A server that cannot read new requests says so: Server.ReadHealth is
// an error while small frames have waited for the budget without a break
// for StarvedAfter (the name server's and the broker's /readyz report
// it). Stats counts the small frames that waited (StarvedReads), the
// connections closed for stalling (StalledCloses) and the refused bodies
// (RefusedBodies). Responses on a server's connections (to Conn.Request
// calls) count until they are handed to their caller.
// Server.HeldBytes and Server.Stats expose the figures. The process's
// resident memory under a flood can reach about twice the budget: the
// garbage collector lets the heap grow to twice what is live (GOGC=100;
// GOMEMLIMIT tightens it). Decoding a header
// within the header limits costs at most about its size in strings plus a
// map of at most MaxExtFields entries.
//
// Client: each pooled connection has a read goroutine as above; requests
// from the server go to ClientConfig.OnRequest on a small worker pool; each
// InvokeAsync completion runs its callback on a goroutine of its own;
// InvokeFunc's runs on the goroutine that ends the call (the read
// goroutine for a response), and its frames are written by a flusher
// goroutine of the connection's, one per burst. Invoke blocks its caller
// until the response, the context's deadline (ErrTimeout) or the
// connection's death (ErrConnClosed). A call that times out while its
// connection read nothing at all for the whole wait closes that
// connection (ErrConnSilent, see silent.go): a peer that vanished without
// a FIN or a RST then costs one call's timeout, not one per call until the
// kernel gives up on it, and the next call dials afresh; a connection
// that reads anything meanwhile stays. With ClientConfig.RawSocketIO, on
// Linux, a client's TCP connections read and write with raw system calls
// on their non-blocking sockets (internal/rawconn), sparing the runtime's
// bookkeeping of a call that may block, and the thread switches it leads
// to; a server's plain TCP connections always do.
//
// Every goroutine is owned: Server.Close and Client.Close close the
// connections, wait for the read goroutines (and the OnConnClose hooks,
// which run on them), then let the workers finish what is queued and wait
// for them and for outstanding callbacks.
//
// # TLS
//
// ServerConfig.TLS makes a server TLS only: each accepted connection
// completes its handshake (bounded by HandshakeTimeout, 10 s) on its read
// goroutine before any frame is read, and one that fails is closed and
// forgotten. A plaintext client on a TLS port therefore sees its
// connection closed (its calls fail with ErrConnClosed), and a TLS client
// on a plaintext port fails its dial: the server reads the ClientHello as
// an oversized frame and disconnects. ClientConfig.TLS handshakes every
// connection the client opens, after Dial and within DialTimeout, with
// the dialled host as server name (internal/tlsconf.ForAddr).
//
// # Invariants
//
//   - The package never modifies a Command it is asked to send: opaques and
//     flags of calls are applied while encoding, so one request may be
//     sent to several addresses at once. A decoded Command's Body aliases
//     its frame buffer; connections read every frame into a fresh buffer,
//     so handlers may keep the Body.
//   - Writes on a connection are serialized and combined: concurrent
//     writers queue whole frames in order and one of them writes the
//     queue, so frames never interleave and a busy connection needs fewer
//     syscalls. A write error or a write that exceeds WriteTimeout closes
//     the connection; a writer waits while 4 MiB are already queued.
//   - Every pending call ends exactly once: with its response, with
//     ErrTimeout when its context's deadline passes, or with ErrConnClosed
//     as soon as its connection dies.
//   - Nothing read from the network can make the package panic, or make a
//     server hold more request bytes than its ReadBudget (a client
//     connection: more than one MaxFrameSize frame): every length is
//     validated before use, and the decoders are fuzzed (the JSON one
//     against encoding/json, the limits against the unlimited decoder).
//   - A connection that delivers no frame for IdleTimeout (server side,
//     120 s by default) is closed, and OnConnClose reports it; so is one
//     that does not finish a frame in time (Limits.FrameTimeout).
//   - Small frames are read however many large frames, complete or not,
//     hold the budget or wait for it: large grants leave ReadReserve.
package remoting
