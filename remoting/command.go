package remoting

import (
	"fmt"
)

// Flag bits of Command.Flag.
const (
	// FlagResponse marks a response. A frame without it is a request, in
	// either direction.
	FlagResponse int32 = 1
	// FlagOneway marks a request that wants no response. The Go client
	// never sets it, so no handler may depend on it to recognise a one-way
	// call; it only suppresses the response.
	FlagOneway int32 = 2
)

// Header serialization types: the high byte of a frame's header-length word.
const (
	SerializeJSON     byte = 0
	SerializeRocketMQ byte = 1
)

// Version is the version number ledgermq puts in the commands it builds:
// the ordinal of Java MQVersion V5_3_3, what Java 5.3.3 servers send.
// Anything non-negative that fits int16 is accepted by clients.
const Version int16 = 479

// Language names of the JSON header. The binary header carries the byte
// code of the same language (see LanguageCode).
const (
	LanguageJava   = "JAVA"
	LanguageCPP    = "CPP"
	LanguageDotNet = "DOTNET"
	LanguagePython = "PYTHON"
	LanguageDelphi = "DELPHI"
	LanguageErlang = "ERLANG"
	LanguageRuby   = "RUBY"
	LanguageOther  = "OTHER"
	LanguageHTTP   = "HTTP"
	LanguageGo     = "GO"
	LanguagePHP    = "PHP"
	LanguageOMS    = "OMS"
	LanguageRust   = "RUST"
	LanguageNodeJS = "NODE_JS"
)

// languageNames is indexed by the binary language code.
var languageNames = [...]string{
	LanguageJava, LanguageCPP, LanguageDotNet, LanguagePython, LanguageDelphi,
	LanguageErlang, LanguageRuby, LanguageOther, LanguageHTTP, LanguageGo,
	LanguagePHP, LanguageOMS, LanguageRust, LanguageNodeJS,
}

// languageOtherCode is the byte code of LanguageOther.
const languageOtherCode byte = 7

// LanguageCode returns the binary-header byte code of a language name and
// whether the name is known. Unknown names (the empty name included) map
// to the code of OTHER.
func LanguageCode(name string) (byte, bool) {
	for i, n := range languageNames {
		if n == name {
			return byte(i), true
		}
	}
	return languageOtherCode, false
}

// LanguageName returns the name of a binary-header language code. Codes
// outside the table decode as OTHER, so that a decoded header always
// re-encodes to the same command.
func LanguageName(code byte) string {
	if int(code) < len(languageNames) {
		return languageNames[code]
	}
	return LanguageOther
}

// Command is one frame of the remoting protocol (Java RemotingCommand):
// a request or a response, in either direction on a connection.
//
// A Command is a plain value. The package never modifies a Command it was
// given to send (the opaque and flag a call needs are applied while
// encoding), so one request may be sent to several connections at once.
// A decoded Command's Body aliases the frame it was decoded from.
type Command struct {
	// Code is the request code in a request, the response code in a
	// response.
	Code int32
	// Language is the sender's language name ("JAVA", "GO", …). In a
	// binary header it travels as a byte code.
	Language string
	// Version is the sender's version ordinal.
	Version int16
	// Opaque identifies the request; a response echoes it on the same
	// connection.
	Opaque int32
	// Flag holds FlagResponse and FlagOneway.
	Flag int32
	// Remark is the error text of a response.
	Remark string
	// ExtFields is the custom header; nil when the frame had none.
	ExtFields map[string]string
	// ExtList is the custom header as a list, for the hot paths that
	// build or read a header of known fields without a map. A command
	// whose ExtFields is nil is encoded with ExtList's fields in their
	// order (the peer reads them into a map, so the order means nothing
	// to it; keys should be distinct). A response goes here instead of
	// ExtFields only for a call that asked for it (see Client.InvokeList).
	ExtList []ExtField
	// Body is the opaque payload after the header.
	Body []byte
	// SerializeType selects the header encoding: SerializeJSON or
	// SerializeRocketMQ.
	SerializeType byte
}

// ExtField is one custom-header field of Command.ExtList.
type ExtField struct{ Key, Value string }

// Ext returns the value of the custom-header field key, from ExtFields or,
// when that is nil, from ExtList.
func (c *Command) Ext(key string) (string, bool) {
	if c.ExtFields != nil {
		v, ok := c.ExtFields[key]
		return v, ok
	}
	for i := len(c.ExtList) - 1; i >= 0; i-- {
		if c.ExtList[i].Key == key {
			return c.ExtList[i].Value, true
		}
	}
	return "", false
}

// ExtMap returns the custom header as a map: ExtFields when set,
// otherwise a new map of ExtList's fields (nil when it is empty; a
// repeated key keeps its last value).
func (c *Command) ExtMap() map[string]string {
	if c.ExtFields != nil || len(c.ExtList) == 0 {
		return c.ExtFields
	}
	m := make(map[string]string, len(c.ExtList))
	for _, f := range c.ExtList {
		m[f.Key] = f.Value
	}
	return m
}

// IsResponse reports whether FlagResponse is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether FlagOneway is set.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// NewRequest returns a JSON request with the given code, custom header and
// body, Language GO and Version. The opaque is assigned when it is sent.
func NewRequest(code int32, ext map[string]string, body []byte) *Command {
	return &Command{
		Code:      code,
		Language:  LanguageGo,
		Version:   Version,
		ExtFields: ext,
		Body:      body,
	}
}

// NewResponse returns the response to req with the given code and remark,
// in the style RocketMQ clients expect: the request's header form (JSON or
// binary, as Java's broker answers since RocketMQ 4.7), the request's
// opaque, FlagResponse, Language JAVA and Version.
func NewResponse(req *Command, code int32, remark string) *Command {
	return &Command{
		Code:          code,
		Language:      LanguageJava,
		Version:       Version,
		Opaque:        req.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		SerializeType: req.SerializeType,
	}
}

// SetExt sets one custom-header field, allocating ExtFields if needed.
func (c *Command) SetExt(key, value string) {
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 8)
	}
	c.ExtFields[key] = value
}

// String summarises the command for logs; the body is given by length only.
func (c *Command) String() string {
	kind, name := "request", RequestCodeName(c.Code)
	if c.IsResponse() {
		kind, name = "response", ResponseCodeName(c.Code)
	}
	return fmt.Sprintf("%s{code=%s opaque=%d flag=%d remark=%q ext=%v body=%dB}",
		kind, name, c.Opaque, c.Flag, c.Remark, c.ExtMap(), len(c.Body))
}
