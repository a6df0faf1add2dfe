package bridge

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// classifyCases are lines of every shape classify meets, and whether the
// scan reads them (scanned) or leaves them to encoding/json.
var classifyCases = []struct {
	name    string
	line    string
	kind    messageKind
	scanned bool
}{
	{"call", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","arguments":{"path":"a \"b\" é"}}}`, kindRequest, true},
	{"string id, spaced", " { \"id\" : \"r-1\" ,\t\"method\" : \"ping\" } \n", kindRequest, true},
	{"notification", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, kindOther, true},
	{"answer", `{"jsonrpc":"2.0","id":3,"result":{"action":"accept","content":{"ok":[1,2,{"a":"}"}]}}}`, kindResponse, true},
	{"error answer", `{"id":"e","error":{"code":-32601,"message":"no"}}`, kindResponse, true},
	{"null id", `{"id":null,"method":"ping"}`, kindOther, true},
	{"no id", `{"method":"ping"}`, kindOther, true},
	{"empty object", `{}`, kindOther, true},
	{"answer with a method", `{"id":1,"result":{},"method":"x"}`, kindRequest, true},
	{"duplicate keys, the last wins", `{"id":1,"method":"a","method":"","result":null}`, kindResponse, true},
	{"unicode method", `{"id":1,"method":"méthode"}`, kindRequest, true},
	{"empty method", `{"id":1,"method":""}`, kindOther, true},
	{"other keys skipped", `{"x":[{"id":1}],"y":"method","z":-1.5e3,"t":true,"id":2,"method":"m"}`, kindRequest, true},
	{"escaped method", `{"id":1,"method":"a\u0062"}`, kindRequest, false},
	{"null method after a method", `{"id":1,"method":"m","method":null}`, kindRequest, false},
	{"number method", `{"id":1,"method":5}`, kindOther, false},
	{"field in upper case", `{"ID":1,"method":"m"}`, kindRequest, false},
	{"escaped key", `{"\u0069d":1,"method":"m"}`, kindRequest, false},
	{"key outside ASCII", `{"reſult":{},"id":1}`, kindResponse, false},
	{"invalid UTF-8 method", "{\"id\":1,\"method\":\"a\xffb\"}", kindRequest, false},
	{"batch", `[{"id":1,"method":"ping"}]`, kindOther, false},
	{"null", `null`, kindOther, false},
	{"string", `"x"`, kindOther, false},
	{"not JSON", `{"id":1,`, kindInvalid, false},
	{"trailing data", `{"id":1,"method":"m"} x`, kindInvalid, false},
	{"empty", ``, kindInvalid, false},
}

// TestClassify: each line is of its kind, scanned or decoded as listed,
// with the same envelope either way.
func TestClassify(t *testing.T) {
	for _, c := range classifyCases {
		t.Run(c.name, func(t *testing.T) {
			m, kind := classify([]byte(c.line))
			assert.Equal(t, c.kind, kind)
			_, scanned := scanEnvelope([]byte(c.line))
			assert.Equal(t, c.scanned, scanned, "scanned")
			wantM, wantK := classifyDecoded([]byte(c.line))
			assert.Equal(t, wantK, kind)
			assert.Equal(t, wantM, m)
		})
	}
}
