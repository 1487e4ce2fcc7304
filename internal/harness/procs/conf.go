package procs

import (
	"fmt"
	"net/netip"
	"strings"
)

// ClusterName is the brokerClusterName of every local node.
const ClusterName = "DefaultCluster"

// NodeConfig is one broker node's config file: RocketMQ key names where
// they exist, ledgermq's own keys beside them.
type NodeConfig struct {
	// Header is the file's first line, a comment (without "# ").
	Header string
	// Group is the brokerName and raft group, ID the node's raft id.
	Group, ID string
	// Advertised is the client address the node registers (brokerIP1,
	// listenPort); Listen, when set, the address it listens on instead
	// (listen_addr: a proxy in front of it).
	Advertised, Listen string
	Namesrv            string
	StoreDir           string
	// RegisterPeriodMS is registerNameServerPeriod.
	RegisterPeriodMS int
	// Peers are the group's raft members as ID-ADDR; RaftBind, when set,
	// where this node's raft listens (raft.bind) if not at its own
	// Peers address.
	Peers    []string
	RaftBind string
	// ClientAddrs are the group's client addresses as ID-ADDR (for
	// forwarding to the leader); Timing is the raft timing profile.
	ClientAddrs []string
	Timing      string
	HTTP        string
	// GRPCListen and GRPCAddrs (ID-ADDR), when set, the RocketMQ 5 gRPC
	// port of the node and of its group.
	GRPCListen string
	GRPCAddrs  []string
	// Extra are KEY=VALUE lines written last, as given.
	Extra []string
}

// Text is the config file.
func (c NodeConfig) Text() []byte {
	ap := netip.MustParseAddrPort(c.Advertised)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", c.Header)
	fmt.Fprintf(&b, "brokerClusterName=%s\nbrokerName=%s\n", ClusterName, c.Group)
	fmt.Fprintf(&b, "brokerIP1=%s\nlistenPort=%d\n", ap.Addr(), ap.Port())
	if c.Listen != "" {
		fmt.Fprintf(&b, "listen_addr=%s\n", c.Listen)
	}
	fmt.Fprintf(&b, "namesrvAddr=%s\nstorePathRootDir=%s\n", c.Namesrv, EscapeValue(c.StoreDir))
	fmt.Fprintf(&b, "registerNameServerPeriod=%d\n", c.RegisterPeriodMS)
	fmt.Fprintf(&b, "enableDLegerCommitLog=true\ndLegerGroup=%s\ndLegerSelfId=%s\n", c.Group, c.ID)
	fmt.Fprintf(&b, "dLegerPeers=%s\n", strings.Join(c.Peers, ";"))
	if c.RaftBind != "" {
		fmt.Fprintf(&b, "raft.bind=%s\n", c.RaftBind)
	}
	fmt.Fprintf(&b, "raft.client_addrs=%s\nraft.timing=%s\n", strings.Join(c.ClientAddrs, ";"), c.Timing)
	fmt.Fprintf(&b, "http_addr=%s\n", c.HTTP)
	if c.GRPCListen != "" {
		fmt.Fprintf(&b, "grpc_listen=%s\ngrpc_addrs=%s\n", c.GRPCListen, strings.Join(c.GRPCAddrs, ";"))
	}
	for _, kv := range c.Extra {
		fmt.Fprintf(&b, "%s\n", kv)
	}
	return []byte(b.String())
}

// EscapeValue escapes a value for a Java properties file (see Escape).
func EscapeValue(s string) string { return Escape(s, false) }

// Escape escapes s for a Java properties file as a value, or as a key
// (key: also '=', ':', '#', '!' and every space), so that
// java.util.Properties reads back exactly s.
func Escape(s string, key bool) string {
	lead := len(s) - len(strings.TrimLeft(s, " \t\f"))
	trail := len(strings.TrimRight(s, " \t\f"))
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\f':
			b.WriteString(`\f`)
		case ' ':
			if key || i < lead || i >= trail {
				b.WriteString(`\ `)
			} else {
				b.WriteByte(' ')
			}
		case '=', ':', '#', '!':
			if key {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}
