// Package jsonenc appends JSON values to a byte slice, byte for byte as
// encoding/json writes them, for the resources rendered on hot paths (a
// message's webhook payloads are written in the send path's transactions).
// encoding/json reaches a type's MarshalJSON by reflection and then scans
// and copies its output again (compacting it); an Appender writes its
// fields once.
package jsonenc

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// Appender is a value that appends its own JSON encoding to b and returns
// the extended slice, as encoding/json would marshal the value.
type Appender interface {
	AppendJSON(b []byte) []byte
}

// String appends s as a JSON string, escaped as encoding/json escapes it
// (HTML characters as \u003c, \u003e and \u0026; invalid UTF-8 as \ufffd).
func String(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			// Phones, types and ids never get here; content that is not
			// plain ASCII does: encoding/json applies its full rules.
			enc, err := json.Marshal(s)
			if err != nil { // unreachable: a string always marshals
				panic("jsonenc: marshal string: " + err.Error())
			}
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// NullString appends *s as a JSON string, or null when s is nil.
func NullString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return String(b, *s)
}

// Int appends n.
func Int(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// NullInt appends *n, or null when n is nil.
func NullInt(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return Int(b, *n)
}

// Time appends t formatted with layout as a JSON string. The layout's
// output must need no escaping (the RFC 3339 layouts do not).
func Time(b []byte, t time.Time, layout string) []byte {
	b = append(b, '"')
	b = t.AppendFormat(b, layout)
	return append(b, '"')
}
