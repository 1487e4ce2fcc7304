package protocol

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"testing"

	"github.com/ledgermq/ledgermq/remoting"
)

var updateCodes = flag.Bool("update-codes", false, "rewrite CODES.md from RequestCodes")

// renderCodes is CODES.md: RequestCodes as a table, with the counts.
func renderCodes() []byte {
	rows := slices.Clone(RequestCodes)
	slices.SortFunc(rows, func(a, b RequestCode) int { return int(a.Code) - int(b.Code) })
	count := map[Server]int{}
	for _, r := range rows {
		count[r.Served]++
	}
	var b bytes.Buffer
	b.WriteString("# RocketMQ's request codes in ledgermq\n\n")
	b.WriteString("Every request code of RocketMQ's remoting protocol (4.x and 5.x, Java `RequestCode`) and\n")
	b.WriteString("ledgermq's own, with the server that serves it. A code no server serves is answered\n")
	b.WriteString("REQUEST_CODE_NOT_SUPPORTED. Rendered from `protocol.RequestCodes` (`go test ./protocol\n")
	b.WriteString("-run TestRequestCodesDoc -update-codes`); the broker's and the name server's tests hold their\n")
	b.WriteString("handler tables to it.\n\n")
	fmt.Fprintf(&b, "Served by the broker: %d. By the name server: %d. By neither: %d.\n\n",
		count[Broker], count[Namesrv], count[Neither])
	b.WriteString("| code | name | served by | note |\n|---:|---|---|---|\n")
	for _, r := range rows {
		by := "—"
		switch r.Served {
		case Broker:
			by = "broker"
		case Namesrv:
			by = "name server"
		case Broker | Namesrv:
			by = "both"
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", r.Code, r.Name, by, r.Note)
	}
	return b.Bytes()
}

// TestRequestCodesDoc: CODES.md is what RequestCodes renders; every code
// appears once, with the name remoting gives it.
func TestRequestCodesDoc(t *testing.T) {
	seen := map[int32]bool{}
	for _, r := range RequestCodes {
		if seen[r.Code] {
			t.Errorf("code %d twice", r.Code)
		}
		seen[r.Code] = true
		if n := remoting.RequestCodeName(r.Code); n != strconv.Itoa(int(r.Code)) && n != r.Name {
			t.Errorf("code %d is %s here, %s in remoting", r.Code, r.Name, n)
		}
	}
	want := renderCodes()
	if *updateCodes {
		if err := os.WriteFile("CODES.md", want, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile("CODES.md")
	if err != nil {
		t.Fatalf("%v (go test ./protocol -run TestRequestCodesDoc -update-codes writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("CODES.md differs from RequestCodes: go test ./protocol -run TestRequestCodesDoc -update-codes")
	}
}
