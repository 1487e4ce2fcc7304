package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// Ext field names of a signed request (doc.go).
const (
	FieldAccessKey     = "AccessKey"
	FieldSignature     = "Signature"
	FieldSecurityToken = "SecurityToken"
	FieldSignTime      = "SignTime"
	FieldSignNonce     = "SignNonce"
)

// ClusterAccessKey is the access key of requests signed with the cluster
// secret (brokers to name servers).
const ClusterAccessKey = "ledgermq-cluster"

// MinSecretLen is the shortest secret Check accepts: a shared secret is
// the whole of the control plane's protection.
const MinSecretLen = 16

// Sentinel errors of verification, compared with errors.Is.
var (
	ErrUnsigned     = errors.New("auth: request not signed")
	ErrUnknownKey   = errors.New("auth: unknown access key")
	ErrBadSignature = errors.New("auth: signature does not match")
	ErrStale        = errors.New("auth: signature time outside the accepted window")
	ErrReplayed     = errors.New("auth: signed request replayed")
)

// Credentials are an access key and its secret.
type Credentials struct {
	AccessKey string
	SecretKey string
}

// Cluster is the cluster secret's credentials.
func Cluster(secret string) Credentials {
	return Credentials{AccessKey: ClusterAccessKey, SecretKey: secret}
}

// CheckSecret reports why secret cannot be a cluster secret ("" means
// none configured and is accepted).
func CheckSecret(secret string) error {
	if secret != "" && len(secret) < MinSecretLen {
		return fmt.Errorf("auth: cluster secret of %d bytes, want at least %d", len(secret), MinSecretLen)
	}
	return nil
}

// NewSecret returns a random secret: 32 random bytes, hex.
func NewSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("auth: random secret: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// Content is the byte string a request's signature covers (doc.go): the
// values of every ext field but Signature, in key order, then body. Sign
// and Verify hash the same bytes without building them.
func Content(ext map[string]string, body []byte) []byte {
	var out []byte
	for _, k := range signedKeys(ext) {
		out = append(out, ext[k]...)
	}
	return append(out, body...)
}

// Signature is base64(HMAC-SHA1(secret, content)).
func Signature(content []byte, secret string) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write(content)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// Sign sets AccessKey, then Signature over ext and body, in ext (which
// must not be nil). It is RocketMQ's ACL signature: nothing else is added.
func Sign(ext map[string]string, body []byte, c Credentials) {
	delete(ext, FieldSignature)
	ext[FieldAccessKey] = c.AccessKey
	ext[FieldSignature] = sign(ext, body, c.SecretKey)
}

// SignFresh is Sign with SignTime (now) and a new SignNonce added first, for
// a checker with a Guard.
func SignFresh(ext map[string]string, body []byte, c Credentials, now time.Time) error {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return fmt.Errorf("auth: nonce: %w", err)
	}
	ext[FieldSignTime] = strconv.FormatInt(now.UnixMilli(), 10)
	ext[FieldSignNonce] = hex.EncodeToString(nonce[:])
	Sign(ext, body, c)
	return nil
}

// Verify checks ext's Signature against ext and body with the secret that
// secretOf returns for its AccessKey, and returns that access key. The
// content is hashed field by field, never copied into one buffer.
func Verify(ext map[string]string, body []byte, secretOf func(accessKey string) (string, bool)) (string, error) {
	sig, ok := ext[FieldSignature]
	ak, hasKey := ext[FieldAccessKey]
	if !ok || sig == "" || !hasKey {
		return "", ErrUnsigned
	}
	secret, known := secretOf(ak)
	if !known {
		return "", fmt.Errorf("%w: %q", ErrUnknownKey, ak)
	}
	want := sign(ext, body, secret)
	if subtle.ConstantTimeCompare([]byte(sig), []byte(want)) != 1 {
		return "", ErrBadSignature
	}
	return ak, nil
}

// sign computes the signature without building the content.
func sign(ext map[string]string, body []byte, secret string) string {
	mac := hmac.New(sha1.New, []byte(secret))
	for _, k := range signedKeys(ext) {
		mac.Write([]byte(ext[k]))
	}
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// signedKeys are ext's keys but Signature, in byte order.
func signedKeys(ext map[string]string) []string {
	keys := make([]string, 0, len(ext))
	for k := range ext {
		if k != FieldSignature {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}
