// Package v2pb is the Go code of the RocketMQ 5 protocol
// (apache.rocketmq.v2: messages and the MessagingService gRPC stubs),
// generated from ../proto by `make proto`. Do not edit the .pb.go files;
// change the .proto files and generate again.
package v2pb
