// Package auth signs and checks remoting requests the way RocketMQ's ACL
// does, so one signature serves the cluster's control plane (a broker's
// REGISTER_BROKER and UNREGISTER_BROKER to the name servers, signed with
// the cluster secret) and RocketMQ clients that sign every request with an
// access key and a secret key (the broker's ACL, package acl).
//
// # The signature, byte for byte
//
// A signed request carries two extra ext fields:
//
//	field          value
//	-------------  ----------------------------------------------------------
//	AccessKey      the signer's access key (the cluster's: ClusterAccessKey)
//	Signature      base64 (standard alphabet, padded) of
//	               HMAC-SHA1(key = secret key bytes, message = content)
//	SecurityToken  optional; signed like any other field when present
//
// content is, with Signature left out and AccessKey already in the map:
//
//	value(k1) ‖ value(k2) ‖ … ‖ value(kN) ‖ body
//
// where k1 < k2 < … < kN are every other ext field key in byte order
// (Java's TreeMap order for the ASCII keys of the protocol), each value is
// its UTF-8 bytes with no separator, and body is the request body as sent
// (nil: nothing). Keys are not part of the content, only their order. This
// is what RocketMQ's AclUtils.combineRequestContent and the Go client's
// ACL interceptor compute, so a request signed by either verifies here.
//
// Example: ext {AccessKey: "ak", brokerName: "broker-a", a: "1"} and body
// "xy" sign the bytes "ak" "1" "broker-a" "xy" = "ak1broker-axy" (keys in
// order AccessKey, a, brokerName: upper case sorts first).
//
// # Freshness (replay)
//
// RocketMQ's signature has no time in it, so a captured request verifies
// for ever. Requests of the control plane therefore also carry, inside the
// signed content:
//
//	field      value
//	---------  ------------------------------------------------------------
//	SignTime   the signer's clock, decimal milliseconds since the Unix epoch
//	SignNonce  16 random bytes, hex: two signed requests never share one
//
// and a Guard refuses one whose SignTime is more than its window (default
// DefaultWindow, 5 minutes, either way: clock skew between hosts) from the
// checker's clock, or whose Signature it has already accepted within the
// window. The Guard remembers at most MaxRemembered signatures; past that
// it forgets the oldest first (only holders of the secret produce entries
// that pass verification, so the bound is reached by legitimate traffic
// only).
//
// # Errors
//
// ErrUnsigned (no Signature or no AccessKey), ErrUnknownKey (an access key
// the checker has no secret for), ErrBadSignature (the HMAC does not
// match), ErrStale (SignTime missing, unparsable or outside the window),
// ErrReplayed (a signature seen before). All are compared with errors.Is.
//
// # Goroutines
//
// Sign, Verify and Content are pure functions. A Guard is safe for
// concurrent use; it starts no goroutine (old entries are dropped as new
// ones arrive).
package auth
