// Package compat holds the compatibility tests: the real
// github.com/apache/rocketmq-client-go/v2 (a test dependency) producing to
// and consuming from ledgermq brokers and name servers over loopback. It
// has no code of its own; its tests are the witness that existing RocketMQ
// applications work unchanged.
package compat
