// Package acl is the access control of brokers and name servers,
// compatible with RocketMQ's plain ACL: the same plain_acl.yml, the same
// signature (package auth), the same decisions. It is a pure core: Parse reads the file's bytes, Check
// decides one request; File reads and reloads the file; mapping request
// codes to resources is the broker's and the name server's.
//
// # The file (plain_acl.yml)
//
//	key                         meaning
//	--------------------------  ------------------------------------------------
//	globalWhiteRemoteAddresses  addresses whose requests pass unchecked
//	accounts[].accessKey        the account's key (≥ 6 characters, unique)
//	accounts[].secretKey        its secret (≥ 6 characters), the HMAC key
//	accounts[].whiteRemoteAddress  one address rule: requests naming this
//	                            account from there pass without a signature
//	accounts[].admin            may send admin requests
//	accounts[].defaultTopicPerm permission on topics not listed (default DENY)
//	accounts[].defaultGroupPerm permission on groups not listed (default DENY)
//	accounts[].topicPerms       ["topic=PERM", …]
//	accounts[].groupPerms       ["group=PERM", …]
//
// PERM is DENY, PUB, SUB or PUB|SUB; anything else reads as DENY, as in
// RocketMQ. Address rules: "*" (any), an exact address, a list "a,b", or
// an IPv4 pattern whose segments are numbers, "*" or ranges "lo-hi", the
// last one also a set "{1,2,3}" ("192.168.*.*", "10.0.1-10.*",
// "192.168.0.{1,2}"). A file is at most MaxFileSize bytes and MaxAccounts
// accounts; YAML aliases are bounded by the decoder.
//
// # Decisions (Check), in order, as RocketMQ's PlainPermissionManager
//
//	step                                         outcome
//	-------------------------------------------  ---------------------------
//	peer on globalWhiteRemoteAddresses           allowed
//	no AccessKey ext field                       refused
//	AccessKey names no account                   refused
//	peer on the account's whiteRemoteAddress     allowed (no signature)
//	Signature does not verify (auth.Verify)      refused
//	request needs admin, account is not          refused
//	a resource's permission does not allow it    refused
//	otherwise                                    allowed
//
// A resource's owned permission is its entry in topicPerms/groupPerms, or
// the account's default for its kind. DENY refuses everything; a needed
// PUB or SUB must be in the owned set; ANY (any access) is met by PUB or
// SUB. Refusals wrap ErrDenied and name the refused thing, e.g. "acl: No
// permission to PUB topic T for accessKey K".
//
// # Where the rules come from
//
// The broker group replicates the file's content through raft (package
// broker, aclsync.go; metadata op "acl"): every node enforces the content
// the group last applied, parsed here, and a node's own file is only how
// an operator edits the group's rules. Parse is deterministic in its
// input, so every node that applied the same bytes decides alike.
// The RocketMQ 5 proxy (`ledgermq proxy --acl-enable`) reads the same
// rules from a group with GET_BROKER_CLUSTER_ACL_CONFIG and parses them
// with Description.Parse, so it decides as the nodes do.
//
// # Concurrency
//
// An ACL is immutable after Parse and safe for concurrent Check calls; a
// change of the rules parses a new one and swaps it in.
//
// # Files
//
// File is one ACL file kept current, for the broker and the name server
// alike: LoadFile reads it, Reload reads it again when its modification
// time or size changed, and a file that no longer reads or parses keeps
// the previous rules (Reload reports the error; the caller logs it and
// owns the goroutine that calls it). FirstAdmin names the first admin
// account in file order (what `ledgermq dev --acl` registers its nodes
// with).
package acl
