// Command seedgen writes the seed corpora of agentgw's fuzz targets
// (docs/fuzzing.md) from the ProtoXEP's examples and the golden stanzas of
// the tests: every element of a kind some target parses becomes a seed in
// PKG/testdata/fuzz/TARGET. Run it from the repository root:
//
//	go run ./internal/fuzztest/seedgen -spec /path/to/protoxep-xmpp-agent-gateway.xml
package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"agentgw/wire"
)

const (
	nsTask   = "urn:xmpp:agent-task:0"
	nsAPI    = "urn:xmpp:agent-api:0"
	nsSearch = "jabber:iq:search"
)

// targets maps an element to the fuzz targets that parse it.
var targets = map[xml.Name][]string{
	{Space: nsTask, Local: "invoke"}:              {"task/FuzzParseInvoke", "task/FuzzParseAnswer"},
	{Space: nsTask, Local: "provide-input"}:       {"task/FuzzParseProvideInput"},
	{Space: nsTask, Local: "cancel"}:              {"task/FuzzParseCancel"},
	{Space: nsTask, Local: "task-state-request"}:  {"task/FuzzParseTaskStateRequest"},
	{Space: nsTask, Local: "task-result-request"}: {"task/FuzzParseTaskResultRequest"},
	{Space: nsTask, Local: "accepted"}:            {"task/FuzzParseAnswer"},
	{Space: nsTask, Local: "event"}:               {"task/FuzzParseAnswer"},
	{Space: nsTask, Local: "task-state"}:          {"task/FuzzParseAnswer"},
	{Space: nsTask, Local: "task-result"}:         {"task/FuzzParseAnswer"},
	{Space: nsTask, Local: "input-accepted"}:      {"task/FuzzParseAnswer"},
	{Space: nsTask, Local: "cancel-accepted"}:     {"task/FuzzParseAnswer"},

	{Space: nsAPI, Local: "register"}:            {"api/FuzzParseRegister"},
	{Space: nsAPI, Local: "activate"}:            {"api/FuzzParseActivate"},
	{Space: nsAPI, Local: "deactivate"}:          {"api/FuzzParseEndpointOp"},
	{Space: nsAPI, Local: "registration-status"}: {"api/FuzzParseEndpointOp"},
	{Space: nsAPI, Local: "remove-endpoint"}:     {"api/FuzzParseEndpointOp"},
	{Space: nsAPI, Local: "remove-version"}:      {"api/FuzzParseRemoveVersion"},
	{Space: nsAPI, Local: "manifest"}:            {"api/FuzzParseManifestRequest", "api/FuzzParseAnswer"},
	{Space: nsAPI, Local: "schema"}:              {"api/FuzzParseSchemaRequest", "api/FuzzParseAnswer"},
	{Space: nsAPI, Local: "registered"}:          {"api/FuzzParseAnswer"},
	{Space: nsAPI, Local: "active"}:              {"api/FuzzParseAnswer"},
	{Space: nsAPI, Local: "removed"}:             {"api/FuzzParseAnswer"},
	{Space: nsAPI, Local: "registration"}:        {"api/FuzzParseAnswer"},
	{Space: "urn:xmpp:hashes:2", Local: "hash"}:  {"api/FuzzParseAnswer"},

	{Space: wire.NSRSM, Local: "set"}:                                {"wire/FuzzParseRSM"},
	{Space: wire.NSData, Local: "x"}:                                 {"wire/FuzzParseMultiResult"},
	{Space: nsSearch, Local: "query"}:                                {"search/FuzzParseRequest", "search/FuzzParseFields", "search/FuzzParseResult"},
	{Space: "vcard-temp", Local: "vCard"}:                            {"legacy/FuzzParseVCard"},
	{Space: "urn:ietf:params:xml:ns:vcard-4.0", Local: "vcard"}:      {"legacy/FuzzParseVCard"},
	{Space: "http://jabber.org/protocol/disco#info", Local: "query"}: {"wire/FuzzEndpointInfo"},
}

var example = regexp.MustCompile(`(?s)<example[^>]*><!\[CDATA\[(.*?)\]\]></example>`)

func main() {
	spec := flag.String("spec", "", "the ProtoXEP XML, whose examples are read")
	flag.Parse()
	var docs []string
	if *spec != "" {
		raw, err := os.ReadFile(*spec)
		if err != nil {
			log.Fatal(err)
		}
		for _, m := range example.FindAllStringSubmatch(string(raw), -1) {
			docs = append(docs, m[1])
		}
	}
	for _, glob := range []string{"testdata/golden/*.xml", "task/testdata/*/*.xml", "search/testdata/*.xml"} {
		files, _ := filepath.Glob(glob)
		for _, name := range files {
			raw, err := os.ReadFile(name)
			if err != nil {
				log.Fatal(err)
			}
			docs = append(docs, string(raw))
		}
	}
	n := 0
	for _, doc := range docs {
		// An example may hold several stanzas and comments: one root.
		root, err := wire.Parse("<seeds>" + doc + "</seeds>")
		if err != nil {
			continue
		}
		for _, top := range root.Children() {
			n += write("wire/FuzzParse", top)
			walk(top, func(el wire.Element) {
				for _, target := range targets[el.Start.Name] {
					n += write(target, el)
				}
			})
		}
	}
	fmt.Println(n, "seeds written")
}

func walk(el wire.Element, f func(wire.Element)) {
	f(el)
	for _, c := range el.Children() {
		walk(c, f)
	}
}

// write stores el as a seed of target, named by its digest; it returns 1
// for a new file.
func write(target string, el wire.Element) int {
	s, err := wire.Marshal(el.Reader())
	if err != nil {
		log.Fatal(err)
	}
	pkg, fn, _ := strings.Cut(target, "/")
	sum := sha256.Sum256([]byte(s))
	dir := filepath.Join(pkg, "testdata", "fuzz", fn)
	path := filepath.Join(dir, "seed-"+hex.EncodeToString(sum[:8]))
	if _, err := os.Stat(path); err == nil {
		return 0
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	body := fmt.Sprintf("go test fuzz v1\nstring(%q)\n", s)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		log.Fatal(err)
	}
	return 1
}
