// Package tlsconf turns certificate, key and CA files into *tls.Config
// values for the product's links, and makes the local CA and certificates
// of the dev cluster.
//
// # Links
//
//	link                          server side                      client side
//	client port (broker, namesrv) certificate; no client cert      verifies the server against the CA
//	raft port (node to node)      certificate; client cert required verifies the server, presents its cert
//	broker → name server / leader as the client port               verifies the server, presents its cert
//
// Client ports never require a client certificate: the RocketMQ client
// turns TLS on with one switch and offers no certificate (and does not
// verify the server's), so asking for one would lock it out. Raft links
// are mutual: a node whose certificate is not signed by the cluster's CA
// can neither dial a peer nor be dialled by one.
//
// # Reload
//
// A Source re-reads its files when one of them changes (modification time
// or size), checked at most every CheckInterval (DefaultCheckInterval) and
// only when a handshake needs the material, so an idle process does no
// work. The check happens inside the handshake: servers through
// GetConfigForClient, clients through GetClientCertificate and
// VerifyConnection. A reload that fails (a certificate written but its key
// not yet, a half-written file) keeps the previous material, logs nothing
// itself, records the error (Source.Err) and retries at the next check:
// rotating files in any order never takes a node off the network.
//
// Client verification: crypto/tls has no hook to swap RootCAs per
// handshake, so a client config sets InsecureSkipVerify and does the full
// chain and host-name verification itself in VerifyConnection against the
// current CA pool. The effect is the standard verification, with a pool
// that follows the CA file.
//
// # Dev certificates
//
// NewCA makes an ECDSA P-256 CA; CA.Issue makes a certificate for
// 127.0.0.1 and localhost, good for both server and client use (a node is
// both on its raft port). WriteDev writes dir/ca.pem, dir/ca-key.pem,
// dir/node.pem and dir/node-key.pem. They are for loopback demos only.
package tlsconf
