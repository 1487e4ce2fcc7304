package main

// The Java properties codec of broker config files (RocketMQ's broker.conf
// is one), registered with viper for the extensions .properties, .props,
// .prop and .conf.
//
// Grammar (java.util.Properties, with one difference noted):
//
//	line          = blank | comment | entry, ended by \n, \r\n or \r
//	comment       = optional whitespace, then '#' or '!', to the end of line
//	entry         = key [ws] [('=' | ':')] [ws] value
//	key           = characters up to the first unescaped '=', ':' or whitespace
//	continuation  = a line ending in an odd number of '\' joins the next line,
//	                whose leading whitespace is dropped
//	escapes       = \t \n \r \f \uXXXX; '\' before any other character is
//	                that character; a lone '\' at the very end is dropped
//
// Difference: unescaped trailing whitespace of a value is dropped (Java
// keeps it), so "listenPort=10911 " means 10911. Keys with dots
// ("raft.node_id") become nested sections, as in YAML and TOML.

import (
	"bytes"
	"fmt"
	"github.com/ledgermq/ledgermq/internal/harness/procs"
	"sort"
	"strconv"
	"strings"
)

// propertiesCodec is viper's Codec for Java properties.
type propertiesCodec struct{}

// Decode parses b and stores every key, nested by its dots, into v.
func (propertiesCodec) Decode(b []byte, v map[string]any) error {
	flat, err := parseProperties(b)
	if err != nil {
		return err
	}
	return nestKeys(flat, v)
}

// Encode writes v (nested sections flattened with dots) as properties,
// sorted by key.
func (propertiesCodec) Encode(v map[string]any) ([]byte, error) {
	flat := map[string]string{}
	flattenInto("", v, func(k string, val any) { flat[k] = stringify(val) })
	return encodeProperties(flat), nil
}

// parseProperties decodes properties text into a flat map. Later entries
// of the same key win, as in Java.
func parseProperties(b []byte) (map[string]string, error) {
	out := map[string]string{}
	lines := splitLines(b)
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// Join continuation lines.
		for endsInContinuation(line) && i+1 < len(lines) {
			i++
			line = line[:len(line)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		key, value, err := splitEntry(line)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", errConfigSyntax, lineNo, err)
		}
		out[key] = value
	}
	return out, nil
}

// splitLines splits on \n, \r\n and \r.
func splitLines(b []byte) []string {
	s := strings.ReplaceAll(string(b), "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	return strings.Split(s, "\n")
}

// endsInContinuation reports whether line ends in an odd number of '\'.
func endsInContinuation(line string) bool {
	n := 0
	for i := len(line) - 1; i >= 0 && line[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitEntry splits one logical line (leading whitespace removed) into its
// unescaped key and value.
func splitEntry(line string) (string, string, error) {
	// Find the end of the key: the first unescaped separator.
	end := len(line)
	for i := 0; i < len(line); i++ {
		c := line[i]
		if c == '\\' {
			i++
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			end = i
			break
		}
	}
	key, err := unescape(line[:end], false)
	if err != nil {
		return "", "", err
	}
	rest := strings.TrimLeft(line[end:], " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	value, err := unescape(rest, true)
	if err != nil {
		return "", "", err
	}
	return key, value, nil
}

// unescape resolves the escapes of s; with trimRight it drops unescaped
// trailing whitespace.
func unescape(s string, trimRight bool) (string, error) {
	var out bytes.Buffer
	keep := 0 // length of out up to its last significant byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			out.WriteByte(c)
			if c != ' ' && c != '\t' && c != '\f' {
				keep = out.Len()
			}
			continue
		}
		i++
		if i == len(s) {
			break // a lone trailing backslash is dropped
		}
		switch s[i] {
		case 't':
			out.WriteByte('\t')
		case 'n':
			out.WriteByte('\n')
		case 'r':
			out.WriteByte('\r')
		case 'f':
			out.WriteByte('\f')
		case 'u':
			if i+5 > len(s) {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			r, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf("malformed \\u escape in %q", s)
			}
			out.WriteRune(rune(r))
			i += 4
		default:
			out.WriteByte(s[i])
		}
		keep = out.Len()
	}
	if trimRight {
		out.Truncate(keep)
	}
	return out.String(), nil
}

// encodeProperties writes flat as sorted key=value lines that
// parseProperties reads back to the same map.
func encodeProperties(flat map[string]string) []byte {
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b bytes.Buffer
	for _, k := range keys {
		b.WriteString(escapeProperty(k, true))
		b.WriteByte('=')
		b.WriteString(escapeProperty(flat[k], false))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// escapeProperty escapes s as a key (every separator and whitespace) or a
// value (control characters, and whitespace at either end).
func escapeProperty(s string, key bool) string { return procs.Escape(s, key) }

// nestKeys stores every dotted key of flat as nested maps in v. A key that
// is both a value and a section, or has an empty part, is an error.
func nestKeys(flat map[string]string, v map[string]any) error {
	keys := make([]string, 0, len(flat))
	for k := range flat {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		parts := strings.Split(k, ".")
		m := v
		for i, p := range parts {
			if p == "" {
				return fmt.Errorf("%w: key %q has an empty part", errConfigSyntax, k)
			}
			if i == len(parts)-1 {
				if _, ok := m[p]; ok {
					return fmt.Errorf("%w: key %q is both a value and a section", errConfigSyntax, k)
				}
				m[p] = flat[k]
				break
			}
			next, ok := m[p]
			if !ok {
				sub := map[string]any{}
				m[p] = sub
				m = sub
				continue
			}
			sub, ok := next.(map[string]any)
			if !ok {
				return fmt.Errorf("%w: key %q is both a value and a section", errConfigSyntax, k)
			}
			m = sub
		}
	}
	return nil
}

// flattenInto calls put for every leaf of the nested map m, with its
// dotted key.
func flattenInto(prefix string, m map[string]any, put func(string, any)) {
	for k, v := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		if sub, ok := v.(map[string]any); ok {
			flattenInto(key, sub, put)
			continue
		}
		put(key, v)
	}
}
