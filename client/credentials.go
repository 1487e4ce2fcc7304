package client

import (
	"context"

	"github.com/ledgermq/ledgermq/auth"
	"github.com/ledgermq/ledgermq/remoting"
)

// WithCredentials signs every request the client sends with accessKey and
// secretKey, as RocketMQ's ACL clients do (package auth: the AccessKey and
// Signature ext fields, HMAC-SHA1 over the sorted field values and the
// body). A broker with its ACL on refuses unsigned requests, and requests
// the account may not make, with NO_PERMISSION (ErrBrokerRefused code 16).
func WithCredentials(accessKey, secretKey string) Option {
	return func(o *options) { o.creds = auth.Credentials{AccessKey: accessKey, SecretKey: secretKey} }
}

// WithAdminCredentials is WithCredentials for an Admin: admin requests
// (topic and group changes, offset resets, raft operations) need an admin
// account.
func WithAdminCredentials(accessKey, secretKey string) AdminOption {
	return func(o *adminOptions) { o.creds = auth.Credentials{AccessKey: accessKey, SecretKey: secretKey} }
}

// rpcClient is the remoting client with every request signed when
// credentials are set. Signing the same request again (a retry) signs it
// afresh.
type rpcClient struct {
	*remoting.Client
	creds auth.Credentials
}

func newRPC(rc *remoting.Client, creds auth.Credentials) *rpcClient {
	return &rpcClient{Client: rc, creds: creds}
}

func (c *rpcClient) sign(req *remoting.Command) {
	if c.creds.AccessKey == "" {
		return
	}
	if req.ExtFields == nil {
		// The signature covers every field, so a request built with
		// ExtList is signed (and sent) from a map of its fields.
		req.ExtFields, req.ExtList = req.ExtMap(), nil
		if req.ExtFields == nil {
			req.ExtFields = map[string]string{}
		}
	}
	auth.Sign(req.ExtFields, req.Body, c.creds)
}

// Invoke signs req and sends it.
func (c *rpcClient) Invoke(ctx context.Context, addr string, req *remoting.Command) (*remoting.Command, error) {
	c.sign(req)
	return c.Client.Invoke(ctx, addr, req)
}

// InvokeWith signs req and sends it with the call's options.
func (c *rpcClient) InvokeWith(ctx context.Context, addr string, req *remoting.Command, o remoting.CallOptions) (*remoting.Command, error) {
	c.sign(req)
	return c.Client.InvokeWith(ctx, addr, req, o)
}

// InvokeFunc signs req and sends it, done receiving the outcome
// (remoting.Client.InvokeFunc).
func (c *rpcClient) InvokeFunc(ctx context.Context, addr string, req *remoting.Command, o remoting.CallOptions, done func(*remoting.Command, error)) error {
	c.sign(req)
	return c.Client.InvokeFunc(ctx, addr, req, o, done)
}

// InvokeOneway signs req and sends it without waiting for an answer.
func (c *rpcClient) InvokeOneway(ctx context.Context, addr string, req *remoting.Command) error {
	c.sign(req)
	return c.Client.InvokeOneway(ctx, addr, req)
}
