package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/xdpcac/xdpcac/cac"
	"go.yaml.in/yaml/v3"
)

// Load reads and checks a configuration file.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(path, data)
}

// Parse checks a configuration held in memory; file names it in errors.
func Parse(file string, data []byte) (*Config, error) {
	data = blankLines(data)
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, syntaxError(file, err)
	}
	var next yaml.Node
	if err := dec.Decode(&next); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, syntaxError(file, err)
		}
		return nil, &Error{File: file, Line: next.Line, Column: next.Column, Key: "---", Msg: "a second YAML document; a config is one document"}
	}
	c := &Config{
		File:        file,
		Ports:       Ports{L2TP: []uint16{1701}, SIP: []uint16{5060}, SIPTCP: []uint16{5060, 5061}},
		Classes:     map[cac.Class]Class{},
		CPU:         CPU{Source: "system", SampleInterval: time.Second},
		SourceTable: 262144,
		DialogTable: 65536,
		StaleAfter:  5 * time.Second,
		OnStale:     "static",
		SIPReject:   SIPReject{RetryAfter: 10 * time.Second, Rate: 100},
		SIPT1:       500 * time.Millisecond,
		// As long as Kamailio's dialog module keeps a dialog by default:
		// no call that is still up loses its session to the expiry.
		SessionExpiry: 12 * time.Hour,
	}
	d := &decoder{file: file, src: strings.Split(string(data), "\n")}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	if keyless(root) {
		// A truncated file must not open every limit by applying nothing.
		d.errorf(&yaml.Node{Line: max(root.Line, 1), Column: max(root.Column, 1)}, "(document)",
			"holds no keys: an empty file would lift every limit; write at least interfaces: [{name: IFACE}]")
		return nil, d.err()
	}
	d.mapping(root, "", c.fields(d))
	for cl, def := range DefaultClasses() {
		if _, set := c.Classes[cl]; !set {
			c.Classes[cl] = def
		}
	}
	c.check(d, root)
	if err := d.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// blankLines empties every line of nothing but spaces and tabs. A pasted
// block often holds one, and YAML refuses a tab where it reads
// indentation, with the line of the block's key; an empty line means the
// same to YAML everywhere else, and keeps every line where it was.
func blankLines(data []byte) []byte {
	lines := bytes.Split(data, []byte("\n"))
	for i, l := range lines {
		if len(bytes.Trim(l, " \t\r")) == 0 {
			lines[i] = nil
		}
	}
	return bytes.Join(lines, []byte("\n"))
}

// keyless reports a document with nothing in it: no node, an empty
// mapping, or a null.
func keyless(root *yaml.Node) bool {
	switch root.Kind {
	case 0:
		return true
	case yaml.MappingNode:
		return len(root.Content) == 0
	case yaml.ScalarNode:
		return root.Tag == "!!null"
	}
	return false
}

// yamlLine finds the line in the YAML library's messages ("yaml: line 3: ...").
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError puts a YAML syntax error in the file:line: form of the rest.
func syntaxError(file string, err error) error {
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		return fmt.Errorf("%s:%s: YAML syntax: %s", file, m[1], m[2])
	}
	return fmt.Errorf("%s: YAML syntax: %w", file, err)
}
