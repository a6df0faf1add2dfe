package ahp

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// The hot path (one pre_action and its decision) is written by hand
// rather than through encoding/json's reflection and its second pass
// over what a MarshalJSON returns: it is most of a round trip's cost.

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it (HTML characters included, invalid UTF-8 replaced).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSON appends the event's JSON to b: the fields in their order, a
// nil payload as null; it refuses a payload that is not valid JSON.
func (e *WireEvent) appendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"event_type":`...)
	b = appendJSONString(b, string(e.EventType))
	b = append(b, `,"session_id":`...)
	b = appendJSONString(b, e.SessionID)
	b = append(b, `,"agent_id":`...)
	b = appendJSONString(b, e.AgentID)
	b = append(b, `,"timestamp":`...)
	b = appendJSONString(b, e.Timestamp)
	b = append(b, `,"depth":`...)
	b = strconv.AppendUint(b, uint64(e.Depth), 10)
	b = append(b, `,"payload":`...)
	if len(e.Payload) == 0 {
		b = append(b, "null"...)
	} else {
		if !json.Valid(e.Payload) {
			return nil, errInvalidPayload
		}
		b = appendCompact(b, e.Payload)
	}
	if e.Context != nil {
		c, err := json.Marshal(e.Context)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"context":`...), c...)
	}
	if len(e.Metadata) > 0 {
		m, err := json.Marshal(e.Metadata)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"metadata":`...), m...)
	}
	return append(b, '}'), nil
}

// appendCompact appends valid JSON without its insignificant spaces, so
// that one message stays on one line.
func appendCompact(b, src []byte) []byte {
	inString, escaped := false, false
	for _, c := range src {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		b = append(b, c)
	}
	return b
}

// appendJSON appends the decision's JSON; the common decisions (allow,
// block without metadata) skip reflection.
func (d *Decision) appendJSON(b []byte) ([]byte, error) {
	switch {
	case d.Kind == Allow && len(d.ModifiedPayload) == 0 && len(d.Metadata) == 0:
		return append(b, `{"decision":"allow"}`...), nil
	case d.Kind == Block && len(d.Metadata) == 0:
		b = append(b, `{"decision":"block","reason":`...)
		b = appendJSONString(b, d.Reason)
		return append(b, '}'), nil
	}
	j, err := d.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(b, j...), nil
}
